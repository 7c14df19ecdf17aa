/**
 * The kinds of directory gpushare writes, each known by the one record file it holds. Which product
 * reads which kind is the product's business; this is only how a directory says what it is.
 */

/** A bench run: run.json. */
export const RUN_FILE = 'run.json';
/** A probe run: probe.json. */
export const PROBE_FILE = 'probe.json';
/** A capacity run: capacity.json. */
export const CAPACITY_FILE = 'capacity.json';
/** A multi-GPU host run (bench --gpus): host.json beside one bench run per GPU. */
export const HOST_FILE = 'host.json';
