/** What the GPU tests share: the built CLI on the real machine, and `ps` of MPS and workload processes for the record. */
import { execa } from 'execa';
import { CLI } from '../helpers.js';

/** The built CLI on the GPU machine, its exit code returned rather than thrown. */
export const gpuCli = (args: string[]) => execa(process.execPath, [CLI, ...args], { reject: false, timeout: 280_000 });

/** What `ps` shows of MPS and workload processes: printed for the record under `label`, and returned. */
export async function psReport(label: string): Promise<string> {
  const ps = await execa('ps', ['-eo', 'pid,ppid,stat,comm,args'], { reject: false });
  // By command name (4th column): the shell running this very test names MPS in its arguments.
  const lines = String(ps.stdout)
    .split('\n')
    .filter((l, i) => i === 0 || /^(nvidia-cuda-mps|python3?)/.test(l.trim().split(/\s+/)[3] ?? ''));
  const text = lines.join('\n');
  console.log(`ps ${label}:\n${text}`);
  return text;
}
