/** The one JSON-lines child of workload clients and probe roles: its queue, its waits, and how it ends, with real node children. */
import { describe, expect, it } from 'vitest';
import type { ExitInfo } from '../../harness/core/process.js';
import { JsonLinesChild, type LineParser } from '../../harness/system/proc/json-lines-child.js';
import { isRunning } from '../../harness/system/proc/process-table.js';
import { execaRunner } from '../../harness/system/proc/runner.js';
import { until } from '../helpers.js';

/** JSON objects are messages; "bad" lines break the contract; anything else is ignored. */
const parse: LineParser<{ n: number }> = (line) => {
  if (line.startsWith('bad')) return { ok: false, error: `printed ${line}` };
  try {
    return { ok: true, message: JSON.parse(line) as { n: number } };
  } catch {
    return null;
  }
};

/** A node child running `script`, which reads its commands from stdin. */
function child(script: string): JsonLinesChild<{ n: number }> {
  return JsonLinesChild.spawn(execaRunner, [process.execPath, '-e', script], {}, parse);
}

describe('JsonLinesChild', () => {
  it('gives what the child did in order, ignores what the parser ignores, and its exit on every later wait', async () => {
    const c = child(
      `console.log('{"n":1}'); console.log('noise'); console.log('bad line'); console.log('{"n":2}'); process.exit(3)`,
    );
    expect(await c.next(10_000)).toEqual({ kind: 'message', message: { n: 1 } });
    expect(await c.next(10_000)).toEqual({ kind: 'bad-line', error: 'printed bad line' });
    expect(await c.next(10_000)).toEqual({ kind: 'message', message: { n: 2 } });
    const exit = { kind: 'exit', exit: expect.objectContaining({ exitCode: 3 }) };
    expect(await c.next(10_000)).toEqual(exit);
    expect(await c.next(10_000)).toEqual(exit);
  });

  it('times out, and stops waiting when its abort signal fires', async () => {
    const c = child(`setInterval(() => {}, 1000)`);
    expect(await c.next(50)).toEqual({ kind: 'timeout' });
    const controller = new AbortController();
    const waiting = c.next(60_000, controller.signal);
    controller.abort('SIGINT');
    expect(await waiting).toEqual({ kind: 'aborted' });
    expect((await c.close('', 100)).left).toEqual([]);
  });

  it('is asked to stop with its stop line, and a child that exits when asked has exited', async () => {
    const c = child(
      `require('readline').createInterface({ input: process.stdin }).on('line', (l) => { if (l === 'stop') process.exit(0) })`,
    );
    expect(await c.close('stop', 10_000)).toEqual({ exited: true, left: [] });
  });

  it('kills one that will not stop, and the descendant that left its process group with setsid()', async () => {
    // The grandchild is detached (setsid): killing the child's group does not reach it.
    const c = child(
      `const g = require('child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { detached: true, stdio: 'ignore' }); console.log(JSON.stringify({ n: g.pid })); process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)`,
    );
    const first = await c.next(10_000);
    const grandchild = first.kind === 'message' ? first.message.n : 0;
    expect(await isRunning(grandchild)).toBe(true);
    expect(await c.close('stop', 200)).toEqual({ exited: false, left: [] });
    await until(async () => !(await isRunning(grandchild)), 10_000, 'the setsid() grandchild to be killed');
  });
});

describe("the runner's children", () => {
  it('one that exited is seen as exited though a descendant that left its group keeps its output open', async () => {
    // The grandchild (setsid) inherits stdout and stderr and outlives the child: a daemonising server.
    const child = execaRunner.spawn([
      process.execPath,
      '-e',
      `const g = require('child_process').spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120000)'], { detached: true, stdio: 'inherit' }); console.log(g.pid); process.exit(4)`,
    ]);
    let grandchild = 0;
    child.onLine((line) => {
      grandchild = Number(line);
    });
    let exit: ExitInfo | null = null;
    void child.exited.then((info) => {
      exit = info;
    });
    try {
      await until(() => exit !== null, 10_000, "the child's exit to be seen");
      expect(exit).toMatchObject({ exitCode: 4 });
      expect(await isRunning(grandchild)).toBe(true);
    } finally {
      if (grandchild > 0) process.kill(grandchild, 'SIGKILL');
    }
  });
});
