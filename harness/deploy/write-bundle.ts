/** Writing a set of files and their README to --out, and the line that says how to verify them. */

import type { AppDeps } from '../core/deps.js';
import { argText } from '../core/escape/terminal.js';
import type { ArtifactFile } from './bundle.js';
import { writeOutDir } from './out-dir.js';

/** Where the host MPS scripts put the daemon's pipes and logs. */
export const MPS_DIRS = { pipeDirectory: '/tmp/nvidia-mps', logDirectory: '/var/log/nvidia-mps' };

/** The files `gpushare verify` reads (harness/verify/declared.ts). */
const VERIFIABLE = new Set([
  'gpushare-mps-start.sh',
  'gpushare-mix-client.sh',
  'gpushare-device-plugin-configmap.yaml',
  'gpushare-mig-parted.yaml',
  'gpushare-fleet-server.sh',
]);

export async function writeBundle(
  out: { dir: string; force: boolean },
  files: ArtifactFile[],
  index: string,
  deps: AppDeps,
): Promise<void> {
  await writeOutDir(
    out.dir,
    [
      ...files.map((f) => ({ name: f.name, content: f.content, mode: f.executable ? 0o755 : 0o644 })),
      { name: 'README.md', content: index, mode: 0o644 },
    ],
    out.force,
  );
  deps.err(`wrote ${files.length + 1} files to ${out.dir}\n`);
  // A printed command, not a run: verify needs the GPU node these files are for.
  if (files.some((f) => VERIFIABLE.has(f.name)))
    deps.err(
      `gpushare: check on the GPU node that every limit they declare holds: gpushare verify ${argText(out.dir)}\n`,
    );
}

/** A README: the title, its lines, and a link to each file. */
export function indexText(title: string, lines: string[], files: ArtifactFile[]): string {
  return [`# ${title}`, '', ...lines, '', ...files.map((f) => `- [\`${f.name}\`](${f.name})`), ''].join('\n');
}
