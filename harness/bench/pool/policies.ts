/**
 * The pool policies this build has, one line each: deleting a policy is deleting its module and its
 * line here (fresh stays). choosePolicy falls back to fresh where warm is gone.
 */
export { fresh } from './fresh.js';
export { warm } from './warm.js';
