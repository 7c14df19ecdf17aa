#!/usr/bin/env node
// A server that daemonises, for the tests of a copy that leaves its process group: the leader starts
// the simulator's OpenAI-compatible server in a session of its own (setsid(), as `--daemon` engines and
// `nohup … &` wrappers do), which keeps the leader's stdout and stderr open; then the leader exits at
// once (--leader exit) or waits for SIGTERM and exits then, leaving the server behind (--leader stay).
// Every other flag (--port, --ttft-ms, --itl-ms, …) is the server's. The server ends by itself after
// --lifetime-s (default 300), so a test that fails leaves nothing for long.
'use strict';
const { spawn } = require('node:child_process');
const path = require('node:path');

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}

if (process.argv.includes('--daemon')) {
  setTimeout(() => process.exit(0), Number(flag('lifetime-s', '300')) * 1000);
  // The server reads its flags from this process's argv.
  require(path.join(__dirname, '..', '..', '..', 'simulator', 'openai-server.cjs'));
} else {
  const leader = flag('leader', 'exit');
  spawn(process.execPath, [__filename, ...process.argv.slice(2), '--daemon'], { detached: true, stdio: 'inherit' });
  if (leader === 'stay') {
    process.on('SIGTERM', () => process.exit(0));
    setInterval(() => {}, 1000);
  } else process.exit(0);
}
