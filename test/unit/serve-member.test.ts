/** One copy of a user's server as a group member, with real processes: where its readiness is asked. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../harness/core/clock.js';
import { ServerMember } from '../../harness/serve/server-member.js';
import { execaRunner } from '../../harness/system/proc/runner.js';

describe("a copy's ready path", () => {
  it('is asked of the copy alone: //127.0.0.2:P/health never reaches another host', async () => {
    // Another host (127.0.0.2 is loopback on Linux) answering 200 to anyone who asks.
    let asked = 0;
    const other = http.createServer((_req, res) => {
      asked++;
      res.end('ok');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.2', resolve));
    const otherPort = (other.address() as AddressInfo).port;
    // The copy itself never answers: nothing listens on its port.
    const member = new ServerMember(execaRunner, systemClock, {
      index: 1,
      label: 'copy 1 of 1',
      command: 'sleep 30',
      env: {},
      port: otherPort,
      readyPath: `//127.0.0.2:${otherPort}/health`,
      request: { api: 'completions', inputTokens: 8, maxTokens: 8, timeoutMs: 1000 },
      inputTokensMax: null,
      cpus: null,
    });
    try {
      member.start();
      expect(await member.ready(1000, new AbortController().signal)).toEqual({ kind: 'timeout' });
      expect(asked).toBe(0);
    } finally {
      await member.stop(1000);
      await new Promise((resolve) => other.close(resolve));
    }
  });
});
