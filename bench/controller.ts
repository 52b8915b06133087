/**
 * Controller API benchmark (not a test): `/api/v1/agent/share` and `/api/v1/agent/status` of a
 * real `svc controller` process, forwarding to a real enrolled agent (`svc serve` on its own data
 * directory) over remoting, with N shares (default 1,000) in the one environment.
 *
 * Set-up as the README's remote-control walkthrough: `svc admin create identity`, a controller
 * config with `agent_controller`, `svc admin create account`, `svc enable --api-endpoint`,
 * `svc agent enroll --yes`, `svc serve`. Then:
 *   1. N × /agent/share (public, proxy, one backend), `--concurrency` at a time: latency per
 *      hundred shares (does a share get slower as the environment fills?) and shares/s;
 *   2. /agent/status with N shares: sequential requests (latency), then `--concurrency` at a time
 *      for `--duration` seconds (throughput).
 * CPU per request is the controller's and the agent's user+system time from /proc over the phase.
 *
 *   npm run bench:controller
 *   npm run bench:controller -- --shares 200 --duration 5
 *   npm run bench:controller -- --profile      # controller and agent under node --cpu-prof
 */
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { writeFileSync } from 'node:fs';
import { MEDIA_TYPE } from '../lib/api-client.ts';
import { startFixedBackend } from './lib/fixed-backend.ts';
import { cpuSeconds, installCleanup, memoryKiB, scratchDir, startProcess, stopAll } from './lib/processes.ts';
import { startSvcServe, svcCommand, waitForOutput } from './lib/svc.ts';
import { fixed, machineLines, markdownTable, mib, writeMarkdown } from './lib/report.ts';
import { intArg } from './lib/load-args.ts';
import { summarizeProfiles } from './lib/cpu-profile.ts';

const { values: flags } = parseArgs({
  options: {
    shares: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '8' },
    'status-samples': { type: 'string', default: '200' },
    duration: { type: 'string', default: '10' },
    profile: { type: 'boolean', default: false },
  },
});
const SHARES = intArg('shares', flags.shares, 1, 100_000);
const CONCURRENCY = intArg('concurrency', flags.concurrency, 1, 256);
const STATUS_SAMPLES = intArg('status-samples', flags['status-samples'], 1, 100_000);
const DURATION_S = intArg('duration', flags.duration, 1, 600);
const REPORT = join(import.meta.dirname, '..', 'docs', 'benchmarks', 'controller.md');
const ROOT = join(import.meta.dirname, '..');

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}

/** p50, p99 and mean of a set of latencies in ms. */
function stats(ms: readonly number[]): { p50: number; p99: number; mean: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    mean: ms.reduce((a, b) => a + b, 0) / ms.length,
  };
}

/** Self time of each profiled process's busiest functions (whole life, start-up included). */
function profileSections(dirs: Record<string, string>): string[] {
  return Object.entries(dirs).flatMap(([name, dir]) => {
    const summary = summarizeProfiles(dir, 12);
    return [
      '',
      `${name} (\`node --cpu-prof\`, ${summary.busyMs.toFixed(0)} ms busy), self time:`,
      '',
      ...summary.frames.map((f) => `- ${(f.share * 100).toFixed(1)} % ${f.name}`),
    ];
  });
}

async function main(): Promise<void> {
  installCleanup();
  const loadBefore = loadavg();
  const base = scratchDir('svc-bench-controller-');
  const controllerDir = join(base, 'controller');
  const profileDirs = { controller: join(base, 'profile-controller'), agent: join(base, 'profile-agent') };
  const nodeFlags = (name: keyof typeof profileDirs): string[] =>
    flags.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDirs[name]] : [];
  const agentDir = join(base, 'agent');
  const backend = await startFixedBackend();
  const zId = (await svcCommand(['admin', 'create', 'identity', 'main', '--data-dir', controllerDir])).trim();
  const config = join(base, 'controller.yaml');
  writeFileSync(
    config,
    stringify({
      data_dir: controllerDir,
      controller: { listen: '127.0.0.1:0' },
      agent_controller: { z_id: zId, identity_path: join(controllerDir, 'identities', 'main.json') },
    }),
  );
  const controller = await startProcess({
    name: 'svc controller',
    command: process.execPath,
    args: [...nodeFlags('controller'), join(ROOT, 'bin', 'svc.js'), 'controller', '--config', config],
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: '', SVC_API_ENDPOINT: '', SVC_LOG_LEVEL: 'warn' },
    timeoutMs: 60_000,
    ready: (line) => /api: +(http:\/\/\S+)\/api\/v1/.exec(line)?.[1],
  });
  const apiBase = controller.ready;
  const account = (await svcCommand(['admin', 'create', 'account', 'bench@example.com', '--config', config])).trim();
  const envZId = (await svcCommand(['enable', account, '--api-endpoint', apiBase, '--data-dir', agentDir])).trim();
  await svcCommand(['agent', 'enroll', '--yes', '--data-dir', agentDir]);
  const agent = await startSvcServe({ name: 'svc serve (agent)', dataDir: agentDir, nodeFlags: nodeFlags('agent') });
  await waitForOutput(agent, /remoting: connected to the controller/);

  const call = async (path: string, body: Record<string, unknown>): Promise<{ ms: number; body: unknown }> => {
    const started = performance.now();
    const res = await fetch(`${apiBase}/api/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE, 'x-token': account },
      body: JSON.stringify({ envZId, ...body }),
    });
    const text = await res.text();
    const ms = performance.now() - started;
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
    return { ms, body: JSON.parse(text) as unknown };
  };
  for (let i = 0; ; i++) {
    try {
      await call('/agent/ping', {});
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const pids = [controller.pid, agent.pid];
  const cpu = (): number[] => pids.map((pid) => cpuSeconds(pid) ?? NaN);
  const perRequestUs = (before: number[], after: number[], requests: number): string[] =>
    before.map((b, i) => fixed(((after[i]! - b) / requests) * 1e6, 0));

  // 1. Fill the environment.
  const shareMs: number[] = new Array<number>(SHARES);
  let next = 0;
  const cpuShare0 = cpu();
  const sharing0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < SHARES) {
        const i = next++;
        shareMs[i] = (
          await call('/agent/share', { shareMode: 'public', backendMode: 'proxy', target: backend.url })
        ).ms;
      }
    }),
  );
  const sharingS = (performance.now() - sharing0) / 1000;
  const cpuShare1 = cpu();
  const status = (await call('/agent/status', {})).body as { shares: unknown[] };
  if (status.shares.length !== SHARES) throw new Error(`status lists ${status.shares.length} shares, not ${SHARES}`);

  // 2. Status with N shares: latency (one at a time), then throughput.
  const statusMs: number[] = [];
  const cpuStatus0 = cpu();
  for (let i = 0; i < STATUS_SAMPLES; i++) statusMs.push((await call('/agent/status', {})).ms);
  const cpuStatus1 = cpu();
  let statusDone = 0;
  const deadline = performance.now() + DURATION_S * 1000;
  const cpuLoad0 = cpu();
  const load0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        await call('/agent/status', {});
        statusDone++;
      }
    }),
  );
  const loadS = (performance.now() - load0) / 1000;
  const cpuLoad1 = cpu();
  const statusBytes = JSON.stringify(status).length;

  const share = stats(shareMs);
  const sequential = stats(statusMs);
  const buckets = Math.max(1, Math.floor(SHARES / 100));
  const bucketSize = Math.ceil(SHARES / buckets);
  const bucketRows = Array.from({ length: buckets }, (_, b) => {
    const slice = shareMs.slice(b * bucketSize, (b + 1) * bucketSize);
    const s = stats(slice);
    return [`${b * bucketSize + 1}–${Math.min(SHARES, (b + 1) * bucketSize)}`, fixed(s.p50, 2), fixed(s.p99, 2)];
  });
  const table = markdownTable(
    [
      'request',
      'requests',
      'concurrency',
      'p50 ms',
      'p99 ms',
      'mean ms',
      'req/s',
      'controller CPU µs/req',
      'agent CPU µs/req',
    ],
    [
      [
        '/agent/share (environment 0 → N shares)',
        `${SHARES}`,
        `${CONCURRENCY}`,
        fixed(share.p50, 2),
        fixed(share.p99, 2),
        fixed(share.mean, 2),
        fixed(SHARES / sharingS, 0),
        ...perRequestUs(cpuShare0, cpuShare1, SHARES),
      ],
      [
        `/agent/status (${SHARES} shares, ${(statusBytes / 1024).toFixed(0)} KiB)`,
        `${STATUS_SAMPLES}`,
        '1',
        fixed(sequential.p50, 2),
        fixed(sequential.p99, 2),
        fixed(sequential.mean, 2),
        fixed(STATUS_SAMPLES / (statusMs.reduce((a, b) => a + b, 0) / 1000), 0),
        ...perRequestUs(cpuStatus0, cpuStatus1, STATUS_SAMPLES),
      ],
      [
        `/agent/status (${SHARES} shares)`,
        `${statusDone}`,
        `${CONCURRENCY}`,
        '-',
        '-',
        '-',
        fixed(statusDone / loadS, 0),
        ...perRequestUs(cpuLoad0, cpuLoad1, statusDone),
      ],
    ],
  );
  const growth = markdownTable(['shares n (in creation order)', '/agent/share p50 ms', 'p99 ms'], bucketRows);
  const memory = `Peak RSS: controller ${mib(memoryKiB(controller.pid).peak)}, agent ${mib(memoryKiB(agent.pid).peak)}.`;
  await stopAll(); // profiles are written as the processes exit
  const profiles = flags.profile ? profileSections(profileDirs) : [];
  console.log([table, '', growth, '', memory, ...profiles].join('\n'));
  await writeMarkdown(
    REPORT,
    [
      '# Controller API benchmark',
      '',
      'Written by `npm run bench:controller` (`bench/controller.ts`); see [../benchmarks.md](../benchmarks.md#controller).',
      '',
      ...machineLines(loadBefore),
      '',
      table,
      '',
      growth,
      '',
      memory,
      ...profiles,
      '',
    ].join('\n'),
  );
  console.error(`wrote ${REPORT}`);
  await backend.close();
}

await main();
