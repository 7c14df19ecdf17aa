/**
 * The pool policies this build has, one line each: deleting a policy is deleting its module and its
 * line here (ahead.ts needs warm.ts; fresh stays). choosePolicy falls back to the next one that is left.
 */
export { ahead } from './ahead.js';
export { fresh } from './fresh.js';
export { warm } from './warm.js';
