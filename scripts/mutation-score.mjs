#!/usr/bin/env node
// The mutation score per product (the folder under harness/) from Stryker's JSON report:
// `node scripts/mutation-score.mjs [scratch/mutation.json]`. Score = detected (killed, timed out) ÷
// valid mutants (detected, survived, no coverage), as Stryker counts it; survivors are listed by file and line.
import { readFileSync } from 'node:fs';

const path = process.argv[2] ?? 'scratch/mutation.json';
let report;
try {
  report = JSON.parse(readFileSync(path, 'utf8'));
} catch (error) {
  console.error(`cannot read ${path} (${error.message.split('\n')[0]}): run npm run test:mutation first`);
  process.exit(2);
}

const DETECTED = new Set(['Killed', 'Timeout']);
const UNDETECTED = new Set(['Survived', 'NoCoverage']);
const products = new Map();
const survivors = [];
for (const [file, { mutants }] of Object.entries(report.files)) {
  const parts = file.replace(/\\/g, '/').split('/');
  const at = parts.indexOf('harness');
  const product = parts[at + 1]?.endsWith('.ts') ? parts[at + 1] : `${parts[at + 1]}/`;
  const row = products.get(product) ?? { detected: 0, undetected: 0, ignored: 0 };
  for (const m of mutants) {
    if (DETECTED.has(m.status)) row.detected++;
    else if (UNDETECTED.has(m.status)) {
      row.undetected++;
      survivors.push(`${file}:${m.location.start.line} ${m.mutatorName}${m.replacement ? ` → ${m.replacement}` : ''} (${m.status})`);
    } else row.ignored++;
  }
  products.set(product, row);
}

const pct = (d, u) => (d + u === 0 ? 'n/a' : `${((100 * d) / (d + u)).toFixed(2)}%`);
const lines = ['| product | mutants | detected | survived | score |', '|---|---:|---:|---:|---:|'];
let all = { detected: 0, undetected: 0 };
for (const [product, r] of [...products].sort(([a], [b]) => a.localeCompare(b))) {
  lines.push(`| ${product} | ${r.detected + r.undetected} | ${r.detected} | ${r.undetected} | ${pct(r.detected, r.undetected)} |`);
  all = { detected: all.detected + r.detected, undetected: all.undetected + r.undetected };
}
lines.push(`| all | ${all.detected + all.undetected} | ${all.detected} | ${all.undetected} | ${pct(all.detected, all.undetected)} |`);
console.log(lines.join('\n'));
if (survivors.length > 0) console.log(`\nSurvivors:\n${survivors.map((s) => `- ${s}`).join('\n')}`);
