/** A verify run's record (verify.json): what the files declared, each row, each case, the daemons it ran. */
import type { MpsDaemonRecord } from '../record/daemon-record.js';
import type { RunStatus } from '../record/record-file.js';
import type { Fingerprint } from '../system/nvidia/schema.js';
import type { CaseName, CaseOutcome } from './cases.js';
import type { Declared } from './declared.js';
import type { Row } from './verdicts.js';

export const VERIFY_SCHEMA_ID = 'gpushare.verify/1';

export interface VerifyRun {
  schema: typeof VERIFY_SCHEMA_ID;
  id: string;
  status: RunStatus;
  createdAt: string;
  finishedAt: string | null;
  fingerprint: Fingerprint;
  gpuIndex: number;
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
