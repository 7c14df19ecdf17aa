/**
 * Vitest setup file: after each test, one turn of the event loop before the next. Synchronous tests
 * (property runs, in-process CLI calls) run back to back otherwise, and on a loaded machine the worker's
 * report to vitest waits behind them until its RPC deadline passes ("Timeout calling onTaskUpdate",
 * seen with three suites on two cores; vitest-dev/vitest discussion 6511).
 */
import { afterEach } from 'vitest';

afterEach(() => new Promise<void>((resolve) => setImmediate(resolve)));
