#!/usr/bin/env node
// Whether two fleet runs sent the same requests (issue #49's trace replay): per server, the measured
// windows' arrivals (scheduled offset within the window) with their input and output lengths, from each
// run's requests.jsonl.gz. `node scripts/compare-replays.mjs <run-a> <run-b> [mode]` prints a line per
// server and exits 1 on any difference. Runs in evidence/ are extracted first (gpushare evidence extract).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

const [a, b, mode = 'mps'] = process.argv.slice(2);
if (a === undefined || b === undefined) {
  console.error('usage: node scripts/compare-replays.mjs <run-a> <run-b> [mode]');
  process.exit(2);
}

/** Per server: its requests of the mode's measured windows, "offset input output", in order. */
function sent(dir) {
  let text;
  try {
    text = gunzipSync(readFileSync(path.join(dir, 'requests.jsonl.gz'))).toString('utf8');
  } catch (error) {
    console.error(`cannot read ${dir}/requests.jsonl.gz (${error.message.split('\n')[0]})`);
    process.exit(2);
  }
  const per = new Map();
  for (const row of text.split('\n').filter(Boolean)) {
    const l = JSON.parse(row);
    if (l.kind !== 'round' || l.mode !== mode || l.server === undefined) continue;
    const list = per.get(l.server) ?? [];
    list.push(`${l.scheduledMs.toFixed(3)} ${l.inputTokens} ${l.requestedTokens}`);
    per.set(l.server, list);
  }
  for (const list of per.values()) list.sort();
  return per;
}

const [one, two] = [sent(a), sent(b)];
let differ = 0;
for (const server of [...new Set([...one.keys(), ...two.keys()])].sort((x, y) => x - y)) {
  const [x, y] = [one.get(server) ?? [], two.get(server) ?? []];
  const same = x.length === y.length && x.every((v, i) => v === y[i]);
  if (!same) differ += 1;
  console.log(`server ${server}: ${x.length} and ${y.length} requests, ${same ? 'the same arrivals and lengths' : 'DIFFERENT'}`);
}
console.log(differ === 0 ? `${one.size} servers: the same requests in both runs` : `${differ} servers differ`);
process.exit(differ === 0 ? 0 : 1);
