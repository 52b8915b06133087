/**
 * `npm run bench:frontend-ab -- <checkout A> <checkout B>` — the CPU per request of two checkouts'
 * frontends, measured side by side: both run at once (each as deployed: its own memory cgroup of
 * the sidecar's limit, the image's environment and entrypoint flags, compile cache warm), against
 * the same backend and provider, logged in the same way, and wrk loads their OAuth shares in turn,
 * A then B, round after round. A change of a few per cent in the frontend's own cost is below the
 * run-to-run drift of bench:frontend (which measures each configuration once, minutes apart on a
 * shared machine); alternating short runs puts both sides under the same drift. Prints each run's
 * µs of CPU per request, the medians and B/A, and each frontend's peak RSS. Two identical checkouts
 * measured this way differ by 2–3 % (docs/benchmarks-history.md, "The sidecar under 80 MiB").
 *
 *   npm run bench:frontend-ab -- <A> <B> [--rounds 6] [--duration 3] [--connections 32] [--memory-limit pod|none|MiB]
 *                                [--a-flags='<NAME=value …> <node flags …>'] [--b-flags='…'] [--pin yes|no]
 *
 * A and B may be the same checkout: `--b-flags` then measures a runtime setting (environment variables, Node or V8 flags
 * beyond the image's entrypoint ones) against the deployed one. `--pin yes` (default) runs both
 * frontends on the last core and wrk and the backend on the others (bench/lib/paired.ts).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DOMAIN, frontendLogin, parseVariant, startDevIdp, startFrontendProcess } from './lib/frontend-process.ts';
import { warmCompileCache } from './lib/image.ts';
import { intArg } from './lib/load-args.ts';
import { memoryLimitArg, MemoryLimits } from './lib/memory-limit.ts';
import { freePort } from './lib/ports.ts';
import {
  commandExists,
  cpuSeconds,
  installCleanup,
  memoryKiB,
  removeScratchDir,
  scratchDir,
  startModule,
  stopAll,
} from './lib/processes.ts';
import type { FixedBackend } from './lib/fixed-backend.ts';
import { pinProcesses } from './lib/paired.ts';
import { fixed, median } from './lib/report.ts';

function settings() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      rounds: { type: 'string', default: '6' },
      duration: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      'memory-limit': { type: 'string', default: 'pod' },
      'a-flags': { type: 'string', default: '' },
      'b-flags': { type: 'string', default: '' },
      pin: { type: 'string', default: 'yes' },
    },
  });
  if (values.pin !== 'yes' && values.pin !== 'no') throw new Error('--pin must be yes or no');
  if (positionals.length !== 2) throw new Error('usage: bench:frontend-ab -- <checkout A> <checkout B> [options]');
  return {
    variants: [parseVariant('a-flags', values['a-flags'], true), parseVariant('b-flags', values['b-flags'], true)],
    roots: positionals.map((p) => resolve(p)),
    rounds: intArg('rounds', values.rounds, 1, 1000),
    duration: intArg('duration', values.duration, 1, 1000),
    connections: intArg('connections', values.connections, 1, 1000),
    pin: values.pin === 'yes',
    memoryLimitMiB: memoryLimitArg(values['memory-limit'], (t) => intArg('memory-limit', t, 64, 65536)),
  };
}

async function main(): Promise<void> {
  const s = settings();
  if (!commandExists('wrk')) throw new Error('wrk is not installed (npm test installs it: scripts/test-prereqs.sh)');
  installCleanup();
  const dir = scratchDir('svc-bench-ab-');
  const memoryLimits = new MemoryLimits(s.memoryLimitMiB === undefined ? undefined : s.memoryLimitMiB * 1048576);
  try {
    for (const [i, root] of s.roots.entries()) warmCompileCache(root, s.variants[i]?.nodeFlags);
    const [backend, idp] = await Promise.all([
      startModule<FixedBackend>('backend', join(import.meta.dirname, 'lib/fixed-backend.ts'), 'startFixedBackend', {
        bodyBytes: 64,
      }),
      startDevIdp(),
    ]);
    const sides = [];
    for (const [i, root] of s.roots.entries()) {
      const port = await freePort();
      const sideDir = join(dir, `side-${i}`);
      mkdirSync(sideDir);
      const { frontend } = await startFrontendProcess({
        root,
        dir: sideDir,
        port,
        backend: new URL(backend.ready.url),
        idp: idp.ready,
        memoryLimits,
        ...(s.variants[i] ? { variant: s.variants[i] } : {}),
      });
      const share = new URL(`http://login.${DOMAIN}:${port}/`);
      const cookie = await frontendLogin(share, idp.ready.issuer);
      const label = `${root}${s.variants[i]?.text ? ` ${s.variants[i]?.text}` : ''}`;
      sides.push({ root: label, pid: frontend.pid, port, host: share.host, cookie, runs: [] as number[] });
    }
    const pinned = s.pin
      ? pinProcesses(
          sides.map((side) => side.pid),
          [backend.pid],
        )
      : undefined;
    // One unmeasured run each first: V8 optimizes the hot path during the first seconds of load.
    for (const side of sides) wrk(side, s);
    for (let round = 1; round <= s.rounds; round++) {
      for (const side of sides) {
        const before = cpuSeconds(side.pid) ?? 0;
        const requests = wrk(side, s);
        side.runs.push((((cpuSeconds(side.pid) ?? 0) - before) * 1e6) / requests);
      }
      process.stderr.write(`round ${round}/${s.rounds} done\n`);
    }
    const lines = sides.map((side, i) => {
      const peak = memoryKiB(side.pid).peak;
      return `${i === 0 ? 'A' : 'B'} ${side.root}: median ${fixed(median(side.runs), 1)} µs/req (runs ${side.runs.map((r) => r.toFixed(0)).join(', ')}), peak RSS ${peak === undefined ? '-' : (peak / 1024).toFixed(1)} MiB`;
    });
    const [a, b] = sides.map((side) => median(side.runs));
    lines.push(
      `B/A: ${((b ?? NaN) / (a ?? NaN)).toFixed(3)} (${s.rounds} alternating rounds of ${s.duration} s, wrk -c${s.connections}, OAuth share; ${pinned?.text ?? 'not pinned'})`,
    );
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await stopAll();
    memoryLimits.removeAll();
    removeScratchDir(dir);
  }
}

/** One wrk run on a side's OAuth share; the number of requests it completed (all 2xx, or it throws). */
function wrk(
  side: { readonly root: string; readonly port: number; readonly host: string; readonly cookie: string },
  s: { readonly connections: number; readonly duration: number },
): number {
  const out = execFileSync(
    'wrk',
    [
      '-t1',
      `-c${s.connections}`,
      `-d${s.duration}`,
      '-H',
      `Host: ${side.host}`,
      '-H',
      `Cookie: ${side.cookie}`,
      `http://127.0.0.1:${side.port}/`,
    ],
    { encoding: 'utf8' },
  );
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  if (/Non-2xx/.test(out) || !(requests > 0)) throw new Error(`${side.root}: wrk saw errors:\n${out}`);
  return requests;
}

await main();
