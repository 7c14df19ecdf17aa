// npm run build: harness/ bundled by esbuild into dist/harness/main.js and the chunks its commands load
// lazily. One bundle rather than tsc's file per module: Node 20 loads an ES module file by file, and the
// ~500 files of a bench (execa alone is 106) cost ~0.2 s of CPU at every start of the CLI. Types are
// checked by `npm run typecheck` (tsc), not here.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

const shared = {
  bundle: true,
  platform: 'node',
  target: 'node20.19',
  format: 'esm',
  outbase: 'harness',
  outdir: 'dist/harness',
  logLevel: 'warning',
  // What bundled CommonJS dependencies expect of their module scope (write-file-atomic names its temp
  // files from __filename; cross-spawn requires Node's built-ins).
  define: { __filename: 'import.meta.filename', __dirname: 'import.meta.dirname' },
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);",
  },
};

// dist/harness only: the typecheck, run beside this by npm run static, keeps its incremental state in dist/.
rmSync('dist/harness', { recursive: true, force: true });
await Promise.all([
  // The load generator's worker processes (load/pool.ts) run their own entry, sharing the CLI's chunks.
  build({
    ...shared,
    entryPoints: ['harness/main.ts', 'harness/load/worker-main.ts'],
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
  }),
  // Developer scripts (npm run docs:cli, schema, bench:self, calibrate:gate), left out of the package: each one file of its own.
  build({
    ...shared,
    entryPoints: [
      'harness/cli/write-reference.ts',
      'harness/cli/write-evidence-index.ts',
      'harness/cli/write-schema.ts',
      'harness/cli/self-bench.ts',
      'harness/cli/calibrate-gate.ts',
    ],
  }),
]);
