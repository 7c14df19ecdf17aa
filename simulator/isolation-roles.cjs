// Simulated roles of workloads/isolation.py, played by the simulated python3. Deterministic: a fake GPU of
// 81920 MiB whose state (each live process's context and memory, a fault) lives in files of a state
// directory: the MPS pipe directory under MPS, else one per harness process. Each process holds a
// 500 MiB context. Under MPS a fault reaches every client (each fails on its next command), the
// server reports FAULT for the next FAKE_MPS_FAULT_ATTEMPTS (default 1) client attempts, which fail,
// and clients beyond FAKE_MPS_CLIENTS (default 48) are refused. FAKE_GREEN=missing: no green contexts.
// FAKE_ISOLATION=crash-hog: the hog dies before it reports.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const TOTAL_MIB = 81920;
const CONTEXT_MIB = 500;
// A client is under MPS only when a daemon answers at its pipe directory, as with the real driver: a
// missing directory, or one given under a misspelled variable, leaves it outside MPS, unlimited.
const underMps =
  Boolean(process.env.CUDA_MPS_PIPE_DIRECTORY) &&
  fs.existsSync(path.join(process.env.CUDA_MPS_PIPE_DIRECTORY, 'control'));
const stateDir = underMps
  ? process.env.CUDA_MPS_PIPE_DIRECTORY
  : path.join(os.tmpdir(), `gpushare-fake-gpu-${process.ppid}`);
fs.mkdirSync(stateDir, { recursive: true });
const out = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const file = (name) => path.join(stateDir, name);
const alive = require('./alive.cjs');

/** Live processes of the fake GPU: role and MiB held, from their files. */
function live() {
  return fs
    .readdirSync(stateDir)
    .filter((n) => n.startsWith('proc-'))
    .map((n) => ({ pid: Number(n.slice(5)), ...JSON.parse(fs.readFileSync(file(n), 'utf8')) }))
    .filter((p) => alive(p.pid));
}
const me = { role: '', heldMib: 0 };
const save = () => {
  fs.mkdirSync(stateDir, { recursive: true });
  fs.writeFileSync(file(`proc-${process.pid}`), JSON.stringify(me));
};
const freeMib = () => TOTAL_MIB - live().reduce((sum, p) => sum + CONTEXT_MIB + p.heldMib, 0);
// FAKE_NODE: a node that ignores a limit (ignore-mem-limit, ignore-thread-pct) or partitions bandwidth
// (bandwidth-partitioned); default: the driver 580 behaviour issue 39 recorded on an H100.
const fakeNode = process.env.FAKE_NODE || '';
/** The daemon's defaults (set_default_*), which the fake daemon keeps in its pipe directory. */
const daemonDefaults = (() => {
  if (!underMps) return {};
  try {
    return JSON.parse(fs.readFileSync(path.join(process.env.CUDA_MPS_PIPE_DIRECTORY, 'defaults.json'), 'utf8'));
  } catch {
    return {};
  }
})();
const sizeMib = (text) => {
  const m = /^(\d+)([GM])$/.exec(text || '');
  return m ? Number(m[1]) * (m[2] === 'G' ? 1024 : 1) : null;
};
/**
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT as recorded on driver 580: a list of index=size; an entry for a GPU
 * the process cannot see (those CUDA_VISIBLE_DEVICES names) drops every limit, and a size without an index is ignored.
 */
function envLimitMib() {
  const text = process.env.CUDA_MPS_PINNED_DEVICE_MEM_LIMIT;
  if (!text) return undefined;
  const entries = text.split(',').map((e) => e.split('='));
  const visible = (process.env.CUDA_VISIBLE_DEVICES || '0').split(',').length;
  if (entries.some((e) => e.length !== 2 || !(Number(e[0]) < visible) || sizeMib(e[1]) === null)) return null;
  return sizeMib(entries[0][1]);
}
const limitMib = (() => {
  if (fakeNode === 'ignore-mem-limit') return Infinity;
  const fromEnv = underMps ? envLimitMib() : undefined;
  if (fromEnv === null) return Infinity;
  if (fromEnv !== undefined) return fromEnv;
  return sizeMib(daemonDefaults.memLimit?.['0']) ?? Infinity;
})();
const threadPct = () =>
  fakeNode === 'ignore-thread-pct' || !underMps
    ? 100
    : Number(process.env.CUDA_MPS_ACTIVE_THREAD_PERCENTAGE || daemonDefaults.threadPct || 100);
const oom = (mib) => `OutOfMemoryError: CUDA out of memory. Tried to allocate ${mib}.00 MiB. (fake)`;
const fits = (mib) => mib <= freeMib() && CONTEXT_MIB + me.heldMib + mib <= limitMib;
const faulted = () => underMps && fs.existsSync(file('fault'));
const ILLEGAL = 'AcceleratorError: CUDA error: an illegal memory access was encountered';

function exit(code) {
  fs.rmSync(file(`proc-${process.pid}`), { force: true });
  // The last role of a time-sliced fake GPU takes its state directory with it (under MPS it is the pipe directory,
  // which the fake daemon's owner removes): an empty one is removed, one still in use is not.
  if (!underMps) {
    for (const n of fs.readdirSync(stateDir).filter((f) => f.startsWith('proc-')))
      if (!alive(Number(n.slice(5)))) fs.rmSync(file(n), { force: true });
    try {
      fs.rmdirSync(stateDir);
    } catch {}
  }
  process.exit(code);
}

function commands(handle) {
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => line.trim() && handle(JSON.parse(line)));
  lines.on('close', () => handle({ cmd: 'stop' }));
}

const flag = (flags, key, fallback) => {
  const i = flags.indexOf(`--${key}`);
  return i === -1 ? fallback : flags[i + 1];
};

function latencies(n, f) {
  return Array.from({ length: n }, (_, i) => f(i));
}

module.exports = function play(flags) {
  const role = flags[0];
  me.role = role;
  const requests = Number(flag(flags, 'requests', 500));
  const periodMs = Number(flag(flags, 'period-ms', 5));
  switch (role) {
    case 'tenant': {
      save();
      out({ event: 'ready', role, pid: process.pid, sms: 132 });
      let kernels = 0;
      return commands((cmd) => {
        if (faulted()) {
          out({ event: 'failed', role, error: ILLEGAL });
          return exit(1);
        }
        kernels += 4; // one batch of kernels between two commands
        if (cmd.cmd === 'alloc')
          out({ event: 'alloc', mib: cmd.mib, ok: fits(cmd.mib), error: fits(cmd.mib) ? null : oom(cmd.mib) });
        else if (cmd.cmd === 'status') out({ event: 'status', kernels, atUs: kernels * 1000 });
        else if (cmd.cmd === 'stop') {
          out({ event: 'result', role, kernels, elapsedS: 1, blockUsPerS: 1 });
          exit(0);
        }
      });
    }
    case 'hog': {
      save();
      out({ event: 'ready', role, pid: process.pid });
      if (process.env.FAKE_ISOLATION === 'crash-hog') {
        process.stderr.write('Fatal Python error: Segmentation fault (fake)\n');
        return exit(1);
      }
      const tries = String(flag(flags, 'try-mib', ''))
        .split(',')
        .filter(Boolean)
        .map((mib) => ({ mib: Number(mib), ok: fits(Number(mib)), error: fits(Number(mib)) ? null : oom(mib) }));
      let chunk = Number(flag(flags, 'chunk-mib', 512));
      const maxMib = Number(flag(flags, 'max-mib', Infinity));
      let error = null;
      for (;;) {
        if (me.heldMib >= maxMib) break;
        if (fits(chunk)) {
          me.heldMib += chunk;
          save();
        } else if (chunk > 64) chunk = 64;
        else {
          error = oom(chunk);
          break;
        }
      }
      save();
      out({ event: 'result', role, tries, heldMib: me.heldMib, error });
      return commands((cmd) => cmd.cmd === 'stop' && exit(0));
    }
    case 'infault': {
      // One process, one context: the fault is sticky, so every tenant's next synchronization fails.
      const tenants = Number(flag(flags, 'tenants', 4));
      save();
      out({ event: 'ready', role, pid: process.pid, tenants, running: tenants });
      out({
        event: 'result',
        role,
        faulterError: ILLEGAL,
        victims: Array.from({ length: tenants }, () => ({ survived: false, error: ILLEGAL })),
      });
      return exit(0);
    }
    case 'faulter': {
      save();
      out({ event: 'ready', role, pid: process.pid });
      if (underMps) {
        fs.writeFileSync(file('fault'), '');
        fs.writeFileSync(file('fault-attempts'), process.env.FAKE_MPS_FAULT_ATTEMPTS || '1');
      }
      out({ event: 'failed', role, error: ILLEGAL });
      return exit(1);
    }
    case 'context': {
      const attempts =
        underMps && fs.existsSync(file('fault-attempts')) ? Number(fs.readFileSync(file('fault-attempts'), 'utf8')) : 0;
      if (attempts > 0) {
        fs.writeFileSync(file('fault-attempts'), String(attempts - 1));
        out({
          event: 'failed',
          role,
          error: 'RuntimeError: cuDevicePrimaryCtxRetain: CUDA_ERROR_MPS_SERVER_NOT_READY (fake)',
        });
        return exit(1);
      }
      if (underMps && live().filter((p) => p.role === 'context').length >= Number(process.env.FAKE_MPS_CLIENTS || 48)) {
        out({
          event: 'failed',
          role,
          error: 'RuntimeError: cuDevicePrimaryCtxRetain: CUDA_ERROR_MPS_MAX_CLIENTS_REACHED (fake)',
        });
        return exit(1);
      }
      save();
      out({
        event: 'ready',
        role,
        pid: process.pid,
        initMs: 10,
        createMs: 120,
        // Under a pinned-memory limit free is the limit's, total stays the whole GPU's (the total trap).
        freeMib: Math.min(freeMib(), limitMib - CONTEXT_MIB - me.heldMib),
        totalMib: TOTAL_MIB,
      });
      return commands((cmd) => {
        if (cmd.cmd !== 'stop') return false;
        out({ event: 'result', role, createMs: 120 });
        return exit(0);
      });
    }
    case 'latency': {
      save();
      out({ event: 'ready', role, pid: process.pid });
      return commands((cmd) => {
        if (cmd.cmd === 'go') {
          // Behind k busy tenants: 2 ms slices time-sliced, 1 µs each under MPS.
          const k = live().filter((p) => p.role === 'tenant').length;
          out({
            event: 'result',
            role,
            latenciesMs: latencies(requests, (i) => 0.05 + (underMps ? 0.001 * k : (2 * k * (i % 10)) / 10)),
            lateRequests: 0,
            periodMs,
          });
        } else if (cmd.cmd === 'stop') exit(0);
      });
    }
    case 'smcap': {
      const pct = threadPct();
      out({
        event: 'result',
        role,
        sms: Math.floor((132 * pct) / 100 / 2) * 2,
        tflops: 6 * pct,
        threadPercentage: String(pct),
      });
      return exit(0);
    }
    case 'trap': {
      const runs = [];
      for (const streamKind of ['pytorch', 'blocking'])
        for (const streams of [1, 4])
          for (const strayCopy of [false, true])
            runs.push({
              streamKind,
              streams,
              strayCopy,
              concurrency: streamKind === 'blocking' && strayCopy ? streams / 2 : streams,
            });
      out({ event: 'result', role, spinUs: 200, runs });
      return exit(0);
    }
    case 'priority': {
      const run = (priority, p99) => ({
        priority,
        latenciesMs: latencies(requests, (i) => (i % 50 === 0 ? p99 : 0.1)),
        lateRequests: 0,
        backgroundBlockUsPerS: 1e9,
      });
      out({ event: 'result', role, runs: [run('normal', 2), run('high', 0.5)], sms: 132, periodMs });
      return exit(0);
    }
    case 'greenctx': {
      if (process.env.FAKE_GREEN === 'missing') {
        out({ event: 'failed', role, error: "AttributeError: module 'torch.cuda' has no attribute 'green_contexts'" });
        return exit(1);
      }
      out({ event: 'ready', role, pid: process.pid, sms: 132, torch: '2.11.0+fake' });
      const critical = Number(flag(flags, 'critical-sms', 16));
      const run = (arm, p99, sms) => ({
        arm,
        latenciesMs: latencies(requests, (i) => (i % 50 === 0 ? p99 : 0.1)),
        lateRequests: 0,
        backgroundBlockUsPerS: 1e6 * sms,
        backgroundSms: sms,
      });
      out({
        event: 'result',
        role,
        runs: [run('streams', 2, 132), run('green', 0.4, 132 - critical)],
        sms: 132,
        criticalSms: critical,
        periodMs,
      });
      return exit(0);
    }
    case 'bandwidth': {
      // verify_probe.py's copy loop: 3000 GB/s alone; its second measurement is the one beside a
      // saturating neighbour (verify's order), which takes 40% of it unless FAKE_NODE=bandwidth-partitioned.
      save();
      out({ event: 'ready', role, pid: process.pid });
      let gos = 0;
      return commands((cmd) => {
        if (cmd.cmd === 'go') {
          gos += 1;
          const beside = gos > 1 && fakeNode !== 'bandwidth-partitioned';
          out({ event: 'result', role, gbps: beside ? 1800 : 3000, seconds: Number(flag(flags, 'seconds', 2)) });
        } else if (cmd.cmd === 'stop') exit(0);
      });
    }
    default:
      process.stderr.write(`fake isolation.py: unknown role ${role}\n`);
      return exit(2);
  }
};
