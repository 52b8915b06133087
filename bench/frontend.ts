/**
 * `npm run bench:frontend` — requests/s and latency of an authenticated GET through the svc frontend
 * versus the same backend directly, a non-OAuth share, and nginx as a reference proxy, in one run.
 *
 * Every server runs in its own process: the backend (nginx answering a fixed body, bench/lib/backend.ts;
 * `--backend node` for bench/lib/fixed-backend.ts's node:http server), the development
 * OIDC provider (devidp/provider.ts), the frontend exactly as deployed (`node bin/svc.js frontend
 * --config <generated yaml>`), nginx (generated config in a scratch dir), and the load generator
 * (autocannon in a child process, or wrk). The session cookie comes from a real login through the
 * provider's login form. Exits non-zero when any configuration saw a non-2xx response or an error.
 *
 *   npm run bench:frontend -- [--duration 10] [--warmup 2] [--connections 32] [--load auto|autocannon|wrk] [--rate auto|N]
 *                              [--latency yes|no] [--latency-at 0.5[,…]] [--latency-rounds 3]
 *                              [--latency-pin no|yes|both] [--saturation-samples 3]
 *                              [--baseline <other checkout>] [--workers N] [--memory-limit pod|none|MiB]
 *                              [--variant='<NAME=value …> <node flags …>' …]
 *                              [--pair-rounds 6] [--pair-seconds 3] [--pair-pin yes|no] [--backend nginx|node]
 *
 * A bare `http.request` keep-alive proxy (bench/lib/proxy-paths.ts) is measured as the floor of a
 * Node HTTP proxy, and a byte relay without HTTP as the floor of Node's sockets and event loop
 * (the report compares each proxy's CPU per request at the fixed rates with its cost at
 * saturation). `--baseline` runs another checkout's frontend beside this one (before/after figures in
 * one run); `--workers N` adds this frontend with `workers: N` (CPU and memory summed over its
 * processes); each `--variant` adds this frontend started with other Node flags and environment
 * variables (e.g. `--variant='--max-semi-space-size=4'`), to measure a runtime setting against the
 * deployed one in the same run; `--latency no` skips the fixed-rate pass.
 *
 * oauth2-proxy (built by bench/provide-go-tools.sh, as released and with a 64-connection idle
 * upstream pool) is measured as the peer a user would pick instead, logged in the same way. Then
 * each configuration is loaded at one fixed arrival rate (`--rate`, default half of the frontend
 * OAuth share's saturation rate, the highest of `--saturation-samples` runs) for latency without
 * coordinated omission (bench/lib/fixed-rate.ts's socket client), in interleaved rounds. `--latency-pin both` (the default) runs that
 * pass twice per rate: with every process free to run on any core, and with the proxies on a core of
 * their own (the load generator and the backend on the others, as for the paired rounds), so the
 * report separates what a proxy adds from what it loses waiting for a core the load generator holds.
 * The report is printed and written to docs/benchmarks/frontend.md.
 *
 * `--load auto` (default) uses wrk when it is installed: written in C, it takes far less of a small
 * machine's CPU from the servers being measured, and reports latency in µs (autocannon: 1 ms steps).
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startContenders } from './lib/frontend-contenders.ts';
import { latencyPasses, pairedPass, saturationPass, saturationSamples } from './lib/frontend-passes.ts';
import { frontendChart, frontendReport } from './lib/frontend-report.ts';
import { frontendBenchSettings } from './lib/frontend-settings.ts';
import { warmCompileCache } from './lib/image.ts';
import { reportFailures } from './lib/measure.ts';
import { MemoryLimits } from './lib/memory-limit.ts';
import { installCleanup, removeScratchDir, scratchDir, stopAll } from './lib/processes.ts';
import { writeMarkdown } from './lib/report.ts';

/* The Markdown report of the last run, also printed. */
const REPORT_FILE = fileURLToPath(new URL('../docs/benchmarks/frontend.md', import.meta.url));
const CHART_FILE = fileURLToPath(new URL('../docs/benchmarks/frontend.svg', import.meta.url));

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * One run: the contenders started (bench/lib/frontend-contenders.ts), the saturation, fixed-rate and
 * paired passes (bench/lib/frontend-passes.ts), the report and chart written
 * (bench/lib/frontend-report.ts). 1 when any contender saw a non-2xx response or an error.
 */
async function main(): Promise<number> {
  const s = frontendBenchSettings();
  installCleanup();
  const dir = scratchDir('svc-bench-frontend-');
  const loadBefore = loadavg();
  // As the image build does (Dockerfile): a frontend that finds its sources there never loads the
  // TypeScript stripper (~15 MiB of RSS and ~100 ms of start-up, for the life of the process).
  for (const root of [ROOT, ...(s.baseline ? [s.baseline] : [])]) warmCompileCache(root);
  for (const variant of s.variants) warmCompileCache(ROOT, variant.nodeFlags);
  const memoryLimits = new MemoryLimits(s.memoryLimitMiB === undefined ? undefined : s.memoryLimitMiB * 1048576);
  try {
    const contenders = await startContenders(s, { root: ROOT, dir, memoryLimits });
    const { backend, targets } = contenders;
    const { results, memory } = await saturationPass(s, contenders);
    const samples = await saturationSamples(s, results, backend.pid);
    const latencySets = await latencyPasses(s, targets, backend.pid, samples);
    const paired = await pairedPass(s, targets, backend.pid);
    const report = frontendReport({
      settings: s,
      backend,
      results,
      latencySets,
      memory,
      startup: contenders.startup,
      loadBefore,
      extras: contenders.extras.map((e) => ({ ...e, memoryAfter: e.memory() })),
      paired,
      saturationSamples: samples,
    });
    process.stdout.write(report);
    await writeMarkdown(REPORT_FILE, report);
    writeFileSync(CHART_FILE, frontendChart(results, latencySets[0]?.latencies ?? []));
    process.stderr.write(`written to ${REPORT_FILE} and ${CHART_FILE}\n`);
    return reportFailures(
      results,
      latencySets.flatMap((set) => set.latencies),
    ) > 0
      ? 1
      : 0;
  } finally {
    await stopAll();
    memoryLimits.removeAll();
    removeScratchDir(dir);
  }
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`bench:frontend failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1000);
    process.exit(1);
  },
);
