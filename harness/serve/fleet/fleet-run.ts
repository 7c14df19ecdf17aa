/**
 * A fleet run's start: the fleet file read and checked, the schedule every window sends (generated under
 * the file's seed for one window, or its trace), its record and its groups (one per mode, copies = the
 * fleet's servers; bench's in-process arm last, where the file has one), and, given the run directory,
 * the schedule written there as a trace.
 */
import path from 'node:path';
import type { Arrival } from '../../load/traffic/schedule.js';
import { traceText } from '../../load/traffic/trace.js';
import { writeOutputFile } from '../../record/store.js';
import { type GroupMode, IN_PROCESS, type ServeGroup, type ServeSettings } from '../record.js';
import type { Fleet } from './fleet-file.js';
import { fleetSchedule, loadFleet } from './fleet-load.js';
import { FLEET_TRACE_FILE, fleetRecord } from './fleet-measure.js';
import type { FleetRecord } from './fleet-record.js';

export interface FleetStart {
  fleet: Fleet;
  schedule: Arrival[];
  record: FleetRecord;
  groups: ServeGroup[];
}

/** bench's in-process arm, after the modes, where the file gives its command (capacity sizes processes only). */
const arms = (fleet: Fleet, settings: ServeSettings): GroupMode[] =>
  fleet.inProcess !== null && settings.measure === 'bench' ? [IN_PROCESS] : [];

export async function fleetStart(file: string, settings: ServeSettings, runDir?: string): Promise<FleetStart> {
  const fleet = await loadFleet(file);
  const schedule = fleetSchedule(fleet, settings.windowMs);
  if (runDir !== undefined) await writeOutputFile(path.join(runDir, FLEET_TRACE_FILE), traceText(schedule));
  return {
    fleet,
    schedule,
    record: fleetRecord(file, fleet, schedule, settings.windowMs),
    groups: [...settings.modes, ...arms(fleet, settings)].map((mode) => ({
      mode,
      copies: fleet.servers.length,
      status: 'pending',
      reason: null,
      rounds: [],
      steps: [],
      env: {},
    })),
  };
}
