/** The fixed settings of gpushare probe's probes. */
/** The fixed settings every probe uses; recorded with the run. */
export const PROBE_SETTINGS = {
  /** What a victim allocates to see whether memory is left for it, MiB. */
  victimAllocMib: 256,
  /** The MPS pinned-memory limit of the memory probe's limited run, MiB. */
  mpsMemLimitMib: 2048,
  smCapPercentages: [100, 50, 25],
  /** Clients the client-limit probe tries at most (the MPS docs say 48 on Volta and later). */
  maxClients: 64,
  contextClients: 4,
  /** Tenants of the one process of the in-process fault probe. */
  inProcessTenants: 4,
  sliceCotenants: [0, 1, 2, 4],
  slice: { periodMs: 10, requests: 500 },
  /** Priority and green contexts: short requests every 2 ms beside a background that fills every SM. */
  critical: { periodMs: 2, requests: 1000, spinUs: 300 },
  criticalSms: 16,
  readyTimeoutMs: 120_000,
  stepTimeoutMs: 120_000,
  stopTimeoutMs: 10_000,
} as const;
