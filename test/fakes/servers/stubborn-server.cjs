#!/usr/bin/env node
// A server slow to stop, for the tests of a second Ctrl-C during a shutdown: the simulator's
// OpenAI-compatible server (every other flag is its), except that while the file --stubborn-while names
// exists it ignores SIGTERM, so a stop waits out its bound before SIGKILL, and appends its pid to
// --term-log (a test's sign that the harness is stopping it). Without that file it exits on SIGTERM, as
// the simulator does. It ends by itself after --lifetime-s (default 300), so a failed test leaves
// nothing for long.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

function flag(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : process.argv[i + 1];
}

const lifetimeS = Number(flag('lifetime-s', '300'));
setTimeout(() => {
  // Its last words, as a crashing engine's are: the harness quotes the end of a server's log.
  process.stderr.write(`stubborn-server: its ${lifetimeS} s are over\n`);
  process.exit(0);
}, lifetimeS * 1000).unref();
require(path.join(__dirname, '..', '..', '..', 'simulator', 'openai-server.cjs'));
const stubborn = flag('stubborn-while', null);
const log = flag('term-log', null);
process.removeAllListeners('SIGTERM');
process.on('SIGTERM', () => {
  if (stubborn === null || !fs.existsSync(stubborn)) process.exit(0);
  if (log !== null) fs.appendFileSync(log, `${process.pid}\n`);
});
