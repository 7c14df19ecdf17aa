/** `npm run evidence:index`: writes evidence/README.md, the index of every committed run (evidence-index.ts). */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { evidenceIndex } from './evidence-index.js';

const root = path.resolve(import.meta.dirname, '..', '..', '..');
const file = path.join(root, 'evidence', 'README.md');
await writeFile(file, await evidenceIndex(root));
process.stdout.write(`wrote ${file}\n`);
