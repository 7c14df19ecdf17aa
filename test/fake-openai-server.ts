/** The fake OpenAI-compatible server (simulator/openai-server.cjs) as the load tests start it. */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './helpers.js';

export const OPENAI_SERVER = path.join(ROOT, 'simulator', 'openai-server.cjs');

/**
 * Starts the fake with `args`, adds it to `started` (the caller kills those after each test), and resolves
 * with its base URL once it printed its port (deadline 10 s), or rejects when it exits first.
 */
export function fakeOpenAiServer(started: ChildProcess[], ...args: string[]): Promise<string> {
  const child = spawn(process.execPath, [OPENAI_SERVER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  started.push(child);
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error('the fake server printed no port within 10 s')), 10_000);
    let out = '';
    child.stdout?.on('data', (bytes: Buffer) => {
      out += bytes;
      const m = /port (\d+)\n/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(`http://127.0.0.1:${m[1]}`);
      }
    });
    child.on('exit', (code) => reject(new Error(`the fake server exited (${code}) before printing its port`)));
  });
}
