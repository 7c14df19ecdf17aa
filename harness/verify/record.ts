/** A verify run's record (verify.json): what the files declared, each row, each case, the daemons it ran. */
import path from 'node:path';
import { UserError } from '../core/errors.js';
import type { MpsDaemonRecord } from '../record/daemon-record.js';
import { VERIFY_FILE } from '../record/kinds.js';
import type { MachineRecordHeader } from '../record/record-file.js';
import { readRegularFile } from '../record/store.js';
import type { CaseName, CaseOutcome } from './cases.js';
import type { Declared } from './declared.js';
import type { Row } from './verdicts.js';

export const VERIFY_SCHEMA_ID = 'gpushare.verify/1';

export interface VerifyRun extends MachineRecordHeader<typeof VERIFY_SCHEMA_ID> {
  /** The directory of generated files checked, as given. */
  artifacts: string;
  declared: Declared;
  /** The named cases asked for (--cases); empty: none. */
  requestedCases: CaseName[];
  rows: Row[];
  cases: CaseOutcome[];
  daemons: MpsDaemonRecord[];
  /** PIDs of clients that would not stop. */
  leftPids: number[];
  warnings: string[];
}

/** The verify run in `dir`, or null when it holds no verify.json; a verify.json of another shape is refused. */
export async function loadVerifyRun(dir: string): Promise<VerifyRun | null> {
  const file = path.join(dir, VERIFY_FILE);
  let text: string;
  try {
    text = await readRegularFile(file, 'give a run directory made by gpushare verify');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let run: unknown;
  try {
    run = JSON.parse(text);
  } catch {
    throw new UserError(`${file} is not JSON: give a run directory made by gpushare verify`);
  }
  const r = run as Partial<VerifyRun> | null;
  if (r?.schema !== VERIFY_SCHEMA_ID || !Array.isArray(r.rows) || !Array.isArray(r.cases) || !r.fingerprint)
    throw new UserError(`${file} is not a verify record of schema ${VERIFY_SCHEMA_ID}: run gpushare verify again`);
  return r as VerifyRun;
}
