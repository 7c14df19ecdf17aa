/**
 * The fake OpenAI server's fleet options (#49 Build 6), through HTTP: --tokens-per-s is one engine's
 * token rate shared by the requests in flight, so throughput saturates; --model-gb is reported and,
 * beyond --mem-fraction × --gpu-gb, refuses to start as an engine out of memory does.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { type RequestSpec, sendRequest } from '../../harness/load/request.js';
import { ROOT } from '../helpers.js';

const SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');
const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

/** Starts the fake: its base URL once it printed its port, or its exit code and stderr (deadline 10 s). */
function fake(...args: string[]): Promise<{ url: string } | { code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('the fake server neither listened nor exited in 10 s')), 10_000);
    let out = '';
    let stderr = '';
    child.stderr?.on('data', (bytes: Buffer) => {
      stderr += bytes;
    });
    child.stdout?.on('data', (bytes: Buffer) => {
      out += bytes;
      const m = /port (\d+)\n/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve({ url: `http://127.0.0.1:${m[1]}` });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(deadline);
      resolve({ code, stderr });
    });
  });
}

async function urlOf(...args: string[]): Promise<string> {
  const got = await fake(...args);
  if (!('url' in got)) throw new Error(`the fake exited ${got.code}: ${got.stderr}`);
  return got.url;
}

const spec = (baseUrl: string, maxTokens: number): RequestSpec => ({
  baseUrl,
  api: 'completions',
  model: 'fake',
  inputTokens: 8,
  maxTokens,
  timeoutMs: 30_000,
});

/** `n` requests of `tokens` each sent at once: the seconds until the last ended, and their tokens. */
async function burst(url: string, n: number, tokens: number): Promise<{ seconds: number; tokens: number[] }> {
  const now = () => performance.now();
  const start = now();
  const records = await Promise.all(Array.from({ length: n }, () => sendRequest(spec(url, tokens), now(), now)));
  expect(records.map((r) => r.outcome)).toEqual(Array(n).fill('ok'));
  return { seconds: (now() - start) / 1000, tokens: records.map((r) => r.outputTokens) };
}

describe('the fake server as a fleet member', () => {
  it('--tokens-per-s: 16 streams share 200 tokens/s (throughput saturates); one alone runs at its --itl-ms', async () => {
    const url = await urlOf('--ttft-ms', '0', '--itl-ms', '20', '--tokens-per-s', '200');
    // 16 × 40 = 640 tokens at 200/s take at least 3.2 s (less the one token the first tick may hold);
    // each stream alone would take 39 × 20 ms = 0.78 s, so without the shared rate they end in ~0.8 s.
    const many = await burst(url, 16, 40);
    expect(many.tokens).toEqual(Array(16).fill(40));
    expect(many.seconds).toBeGreaterThanOrEqual(639 / 200);
    expect(640 / many.seconds).toBeLessThanOrEqual(200 * 1.01);
    // Below the rate, a stream is held only by its own floor: 39 gaps of 20 ms, well under the 3.2 s.
    const one = await burst(url, 1, 40);
    expect(one.seconds).toBeGreaterThanOrEqual(0.78);
    expect(one.seconds).toBeLessThan(many.seconds * 0.75);
  });

  it('--model-gb: reported by /v1/models; over --mem-fraction × --gpu-gb the server refuses to start', async () => {
    const refused = await fake('--model-gb', '10', '--gpu-gb', '80', '--mem-fraction', '0.12');
    expect(refused).toEqual({
      code: 1,
      stderr: 'openai-server: the model (10 GB) does not fit its memory share (0.12 x 80 GB = 9.6 GB)\n',
    });
    const url = await urlOf('--model-gb', '10', '--gpu-gb', '80', '--mem-fraction', '0.125');
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ model_gb: number }> };
    expect(models.data[0]?.model_gb).toBe(10);
  });

  it('refuses a token rate ≤ 0 or a memory share outside (0, 1] with exit 2', async () => {
    for (const args of [
      ['--tokens-per-s', '0'],
      ['--mem-fraction', '1.5'],
    ])
      expect(await fake(...args)).toMatchObject({ code: 2, stderr: expect.stringMatching(/--tokens-per-s/) });
  });
});
