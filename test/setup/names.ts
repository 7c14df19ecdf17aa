/**
 * Vitest setup file: a test whose name, or a suite's above it, still holds a printf placeholder (%s,
 * %j...) fails, naming it. `it.each` prints one literally when the case has no value for it (an empty
 * array for %j), and such names say nothing of the case.
 */
import { beforeEach } from 'vitest';

const PLACEHOLDER = /%[sdifjoOc#]/;

beforeEach((context) => {
  for (let task: { name: string; suite?: { name: string } } | undefined = context.task; task; task = task.suite)
    if (PLACEHOLDER.test(task.name))
      throw new Error(`the test name "${task.name}" holds a literal placeholder: give each case a name of its own`);
});
