/** `npm run docs:cli`: writes docs/cli.md from the commands' --help (cliReference). */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cliReference } from './reference.js';

const file = path.resolve(import.meta.dirname, '..', '..', '..', 'docs', 'cli.md');
await writeFile(file, await cliReference());
process.stdout.write(`wrote ${file}\n`);
