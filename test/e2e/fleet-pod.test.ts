/**
 * The pod script `gpushare fleet job` writes, run by /bin/sh with a fake gpushare and kubectl: it hands
 * its runs back through the documented kubectl one-liner, passes SIGTERM on to bench, and keeps a
 * predecessor's run on a claim.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { collectCommand, EXTRACT_PIPELINE, type FleetJobSpec, podScript } from '../../harness/fleet/job/manifest.js';
import { resolveFleetJobOptions } from '../../harness/fleet/job/options.js';
import { tempDir, until } from '../helpers.js';

/**
 * A fake gpushare that writes a run directory at --out (with --gpus all, host.json and a run per GPU of
 * $FAKE_GPUS, as bench does) and exits $FAKE_EXIT, and a fake kubectl that serves one pod's log.
 */
function fakeTools(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'gpushare'),
    [
      '#!/bin/sh',
      'while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift ;; --gpus) gpus=$2; shift ;; esac; shift; done',
      'if [ -n "$gpus" ]; then',
      '  mkdir -p "$out" && echo \'{"schema":"gpushare-host/1"}\' > "$out/host.json"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template.
      '  for gpu in $(seq 0 $((${FAKE_GPUS:-2} - 1))); do mkdir -p "$out/gpu$gpu" && printf \'{"gpu":"%s","node":"%s"}\\n\' "$gpu" "$NODE_NAME" > "$out/gpu$gpu/run.json"; done',
      'else',
      '  mkdir -p "$out" && printf \'{"gpu":"0","node":"%s"}\\n\' "$NODE_NAME" > "$out/run.json"',
      'fi',
      'echo "bench progress on stderr" >&2',
      // FAKE_WAIT: a bench still measuring, which on SIGTERM saves its run and exits 143. It stops its
      // sleep too: left running, the sleep would hold the pod's stdout open for its 30 s.
      'if [ -n "$FAKE_WAIT" ]; then trap \'kill $! 2>/dev/null; echo saved > "$out/stopped"; exit 143\' TERM; touch "$out/measuring"; sleep 30 & wait; fi',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template.
      'exit "${FAKE_EXIT:-0}"',
      '',
    ].join('\n'),
  );
  writeFileSync(
    path.join(dir, 'kubectl'),
    '#!/bin/sh\ncase "$1" in get) echo pod/gpushare-fleet-0-x7k2p ;; logs) cat "$FAKE_LOG" ;; esac\n',
  );
  for (const tool of ['gpushare', 'kubectl']) chmodSync(path.join(dir, tool), 0o755);
}

/**
 * Runs the pod's script with /results moved into a temporary directory, as the container would. With
 * `log`, its stderr goes into its stdout as it is written, as the container's log interleaves them
 * line by line in time: two pipes read by this process would interleave them in whatever order the
 * reads came, and could put bench's progress between the results' begin and end lines.
 */
async function runPod(spec: FleetJobSpec, env: Record<string, string>, { log = false } = {}) {
  const root = tempDir('gpushare-pod-');
  const bin = path.join(root, 'bin');
  fakeTools(bin);
  const results = path.join(root, 'results');
  mkdirSync(results);
  const script = `${log ? 'exec 2>&1\n' : ''}${podScript(spec).replaceAll('/results', results)}`;
  const pod = await execa('/bin/sh', ['-c', script], {
    reject: false,
    env: { PATH: `${bin}:${process.env.PATH ?? ''}`, NODE_NAME: 'node-a', JOB_COMPLETION_INDEX: '2', ...env },
  });
  return { root, bin, results, pod };
}

describe('results in the logs: the pod prints its runs, the documented one-liner unpacks them', () => {
  const spec = (over: Partial<FleetJobSpec> = {}): FleetJobSpec => ({
    ...resolveFleetJobOptions({ nodes: 'pool=h100', image: 'x/gpushare:1', count: '3' }).spec,
    ...over,
  });

  it("round-trips every GPU's run through kubectl logs", async () => {
    const { root, bin, pod } = await runPod(spec({ gpusPerNode: 2 }), {}, { log: true });
    expect(pod.exitCode).toBe(0);
    // kubectl logs gives stdout and stderr as one stream.
    expect(pod.stdout).toContain('bench progress on stderr\n');
    expect(pod.stdout).toContain('gpushare-bench-exit node-a 0\ngpushare-results-begin node-a-2\n');
    writeFileSync(path.join(root, 'pod.log'), pod.stdout);
    const work = path.join(root, 'work');
    mkdirSync(work);
    const collect = await execa('/bin/sh', ['-c', collectCommand({ name: 'gpushare-fleet', namespace: null })], {
      cwd: work,
      reject: false,
      env: { PATH: `${bin}:${process.env.PATH ?? ''}`, FAKE_LOG: path.join(root, 'pod.log') },
    });
    expect(collect.stderr).toBe('');
    expect(collect.exitCode).toBe(0);
    expect(readdirSync(path.join(work, 'fleet-results', 'node-a')).sort()).toEqual(['gpu0', 'gpu1', 'host.json']);
    expect(JSON.parse(readFileSync(path.join(work, 'fleet-results', 'node-a', 'gpu1', 'run.json'), 'utf8'))).toEqual({
      gpu: '1',
      node: 'node-a',
    });
    expect(collectCommand({ name: 'gpushare-fleet', namespace: null })).toContain(EXTRACT_PIPELINE);
  });

  it('passes the SIGTERM of an eviction or the deadline on to bench (the shell is PID 1), waits for it, and fails the pod', async () => {
    const root = tempDir('gpushare-pod-');
    const bin = path.join(root, 'bin');
    fakeTools(bin);
    const results = path.join(root, 'results');
    mkdirSync(results);
    const pod = execa('/bin/sh', ['-c', podScript(spec()).replaceAll('/results', results)], {
      reject: false,
      env: { PATH: `${bin}:${process.env.PATH ?? ''}`, NODE_NAME: 'node-a', JOB_COMPLETION_INDEX: '0', FAKE_WAIT: '1' },
    });
    await until(
      () => existsSync(path.join(results, 'node-a', 'gpu0', 'measuring')),
      10_000,
      'bench to start measuring',
    );
    pod.kill('SIGTERM');
    const ended = await pod;
    expect(readFileSync(path.join(results, 'node-a', 'gpu0', 'stopped'), 'utf8')).toBe('saved\n');
    expect(ended.stdout).toContain('gpushare-bench-exit node-a/gpu0 143\n');
    expect(ended.exitCode).toBe(143);
  });

  it('a measured run (bench exit 1 or 3) succeeds the pod; exit 2 fails it, and still prints what there is', async () => {
    for (const [bench, podExit] of [
      ['1', 0],
      ['3', 0],
      ['2', 2],
    ] as const) {
      const { pod } = await runPod(spec({ per: 'gpu', gpusPerNode: 4 }), { FAKE_EXIT: bench });
      expect(pod.exitCode).toBe(podExit);
      expect(pod.stdout).toContain(`gpushare-bench-exit node-a/pod2 ${bench}\n`);
      expect(pod.stdout).toMatch(/gpushare-results-begin node-a-2\n[A-Za-z0-9+/=\n]+gpushare-results-end$/);
    }
  });

  it("on a claim, a retried pod keeps its predecessor's run and prints nothing", async () => {
    const first = await runPod(spec({ results: { kind: 'pvc', claimName: 'runs' } }), {});
    expect(first.pod.stdout).toBe('gpushare-bench-exit node-a/gpu0 0');
    const again = await execa(
      '/bin/sh',
      ['-c', podScript(spec({ results: { kind: 'pvc', claimName: 'runs' } })).replaceAll('/results', first.results)],
      {
        env: { PATH: `${first.bin}:${process.env.PATH ?? ''}`, NODE_NAME: 'node-a', JOB_COMPLETION_INDEX: '0' },
      },
    );
    expect(again.stdout).toMatch(/^gpushare-bench-exit node-a\/gpu0-retry-\d{8}T\d{6}Z 0$/);
    expect(readdirSync(path.join(first.results, 'node-a'))).toHaveLength(2);
  });
});
