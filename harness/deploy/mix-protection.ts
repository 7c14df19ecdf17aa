/** The protection a mix run found, as facts for the files: each aggressor's MPS thread cap, and the run in words. */

import { protectionFor, protections } from '../mix/analysis.js';
import { loadMixRun, type MixRun } from '../mix/record.js';
import { notARunOf } from '../record/record-file.js';
import type { ClientCap } from './mix-clients.js';

/** The mix run in `dir`, or a refusal naming what the directory holds instead. */
export async function loadMix(dir: string): Promise<MixRun> {
  return (await loadMixRun(dir)) ?? Promise.reject(await notARunOf(dir, 'mix'));
}

/** Each aggressor's cap from a mix run, with the loads it held at (see protectionFor). */
export function mixCaps(mix: MixRun): ClientCap[] {
  const found = protections(mix);
  return mix.settings.aggressors.map((a) => ({ aggressor: a.name, ...protectionFor(found, a.name) }));
}

/** The mix run as the files' comments name it: its victim, the protection asked and the loads. */
export function mixSource(mix: MixRun): string {
  const p = mix.settings.protect;
  return `mix run ${mix.id} (victim ${mix.settings.victim.name}, p99 within ${p.kind === 'ms' ? `${p.value} ms` : `${p.value}× alone`} at ${mix.settings.loads.map((l) => `${Math.round(l * 100)}%`).join(' and ')} load)`;
}
