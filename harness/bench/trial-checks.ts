/** What makes a trial's result implausible: defined once in workload/ (gpushare check applies it too). */
export { implausibleResult } from '../workload/plausibility.js';
