/**
 * `npm run bench:share-pod` — what a Kubernetes share pod costs per request and in memory, with
 * its containers run as the operator builds them (image flags and environment, each process in
 * its own memory cgroup of the sidecar's limit, compile cache warm), in one run, interleaved:
 *
 * - OAuth share, one container (an OAuth `proxy` share's pod): `svc frontend` → the app;
 * - OAuth share, two containers (the pod before, and still the shape of an OAuth `web` share):
 *   `svc frontend` → `svc agent backend --identity-headers pass` on loopback → the app;
 * - share without OAuth: `svc agent backend --identity-headers strip` → the app;
 * - the app directly (the reference).
 *
 * wrk loads each in turn, round after round. The OAuth pods' visitor logged in once through the
 * installation's auth endpoint, a frontend of its own outside the pods, as in Kubernetes (a share's
 * sidecar never takes a login callback); the sidecars only open its session cookie. CPU per
 * request is the sum over the pod's processes; peak RSS the sum of their peaks. With `--pin yes`
 * (default) every pod process runs on the last core, wrk and the app on the others, so a pod is
 * measured as if limited to one core. Writes docs/benchmarks/share-pod.md and prints it.
 *
 *   npm run bench:share-pod -- [--rounds 5] [--duration 3] [--connections 32] [--memory-limit pod|none|MiB] [--pin yes|no]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchInstallation, DOMAIN, frontendLogin, startDevIdp, startFrontendProcess } from './lib/frontend-process.ts';
import type { FixedBackend } from './lib/fixed-backend.ts';
import { imageEnvironment, imageNodeFlags, warmCompileCache } from './lib/image.ts';
import { intArg } from './lib/load-args.ts';
import { inMemoryLimit, memoryLimitArg, MemoryLimits } from './lib/memory-limit.ts';
import { pinProcesses } from './lib/paired.ts';
import { freePort } from './lib/ports.ts';
import {
  commandExists,
  cpuSeconds,
  installCleanup,
  memoryKiB,
  removeScratchDir,
  scratchDir,
  startModule,
  startProcess,
  stopAll,
} from './lib/processes.ts';
import { fixed, machineLines, markdownTable, median, mib, ratio, writeMarkdown } from './lib/report.ts';

const ROOT = join(import.meta.dirname, '..');
const REPORT = join(ROOT, 'docs/benchmarks/share-pod.md');

function settings() {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      duration: { type: 'string', default: '3' },
      connections: { type: 'string', default: '32' },
      'memory-limit': { type: 'string', default: 'pod' },
      pin: { type: 'string', default: 'yes' },
    },
  });
  if (values.pin !== 'yes' && values.pin !== 'no') throw new Error('--pin must be yes or no');
  return {
    rounds: intArg('rounds', values.rounds, 1, 1000),
    duration: intArg('duration', values.duration, 1, 1000),
    connections: intArg('connections', values.connections, 1, 1000),
    pin: values.pin === 'yes',
    memoryLimitMiB: memoryLimitArg(values['memory-limit'], (t) => intArg('memory-limit', t, 64, 65536)),
  };
}

/** One thing wrk loads: where, with which headers, and the processes that make up the pod (none for the app). */
interface Contender {
  readonly name: string;
  readonly url: string;
  readonly headers: readonly string[];
  readonly pids: readonly number[];
  readonly runs: { requestsPerSecond: number; cpuUsPerRequest: number | undefined }[];
}

/** `svc agent backend` as the agent container of a share pod runs it. */
async function startAgentBackend(target: string, identityHeaders: 'pass' | 'strip', memoryLimits: MemoryLimits) {
  const port = await freePort();
  const agent = await startProcess<true>({
    name: `agent-backend-${identityHeaders}`,
    ...inMemoryLimit(memoryLimits.next(), process.execPath, [
      ...imageNodeFlags(),
      join(ROOT, 'bin/svc.js'),
      'agent',
      'backend',
      '--backend-mode',
      'proxy',
      '--target',
      target,
      '--listen',
      `127.0.0.1:${port}`,
      '--identity-headers',
      identityHeaders,
    ]),
    cwd: ROOT,
    env: { ...process.env, ...imageEnvironment() },
    ready: (line) => (line.includes('share backend listening') ? true : undefined),
  });
  return { pid: agent.pid, url: `http://127.0.0.1:${port}/` };
}

async function main(): Promise<void> {
  const s = settings();
  if (!commandExists('wrk')) throw new Error('wrk is not installed (npm test installs it: scripts/test-prereqs.sh)');
  installCleanup();
  const loadBefore = loadavg();
  const dir = scratchDir('svc-bench-share-pod-');
  const memoryLimits = new MemoryLimits(s.memoryLimitMiB === undefined ? undefined : s.memoryLimitMiB * 1048576);
  try {
    warmCompileCache(ROOT);
    const [app, idp] = await Promise.all([
      startModule<FixedBackend>('app', join(import.meta.dirname, 'lib/fixed-backend.ts'), 'startFixedBackend', {
        bodyBytes: 64,
      }),
      startDevIdp(),
    ]);
    const appUrl = new URL(app.ready.url);
    // As in Kubernetes, the installation's auth endpoint (a frontend outside the share pods) takes
    // the logins; the pods' sidecars only open the session cookie it sets.
    const installation = benchInstallation(await freePort());
    const frontendIn = async (label: string, port: number, target: URL) => {
      const sub = join(dir, label);
      mkdirSync(sub);
      const { frontend } = await startFrontendProcess({
        root: ROOT,
        dir: sub,
        port,
        backend: target,
        idp: idp.ready,
        memoryLimits,
        installation,
      });
      return frontend.pid;
    };
    await frontendIn('auth', installation.authPort, appUrl);
    const oauthPod = async (target: URL, label: string) => {
      const port = await freePort();
      return {
        pid: await frontendIn(label, port, target),
        url: `http://127.0.0.1:${port}/`,
        host: `login.${DOMAIN}:${port}`,
      };
    };
    const passing = await startAgentBackend(appUrl.href, 'pass', memoryLimits);
    const stripping = await startAgentBackend(appUrl.href, 'strip', memoryLimits);
    const [podOne, podTwo] = [await oauthPod(appUrl, 'one'), await oauthPod(new URL(passing.url), 'two')];
    const cookie = await frontendLogin(new URL(`http://${podOne.host}/`), idp.ready.issuer);
    const oneContainer = { ...podOne, headers: [`Host: ${podOne.host}`, `Cookie: ${cookie}`] };
    const twoContainers = { ...podTwo, headers: [`Host: ${podTwo.host}`, `Cookie: ${cookie}`] };
    const contenders: Contender[] = [
      { name: 'the app directly', url: appUrl.href, headers: [], pids: [], runs: [] },
      {
        name: 'OAuth share pod, one container: frontend → app',
        ...oneContainer,
        pids: [oneContainer.pid],
        runs: [],
      },
      {
        name: 'OAuth share pod, two containers: frontend → agent backend → app',
        ...twoContainers,
        pids: [twoContainers.pid, passing.pid],
        runs: [],
      },
      {
        name: 'share pod without OAuth: agent backend → app',
        url: stripping.url,
        headers: [],
        pids: [stripping.pid],
        runs: [],
      },
    ];
    const podPids = contenders.flatMap((c) => c.pids);
    const pinned = s.pin ? pinProcesses(podPids, [app.pid]) : undefined;
    // One unmeasured run each first: V8 optimizes the hot paths during the first seconds of load.
    for (const c of contenders) wrk(c, s);
    for (let round = 1; round <= s.rounds; round++) {
      for (const c of contenders) {
        const cpu = (): number | undefined =>
          c.pids.length === 0 ? undefined : c.pids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? NaN), 0);
        const before = cpu();
        const { requests, seconds } = wrk(c, s);
        const after = cpu();
        c.runs.push({
          requestsPerSecond: requests / seconds,
          cpuUsPerRequest:
            before === undefined || after === undefined ? undefined : ((after - before) * 1e6) / requests,
        });
      }
      process.stderr.write(`round ${round}/${s.rounds} done\n`);
    }
    pinned?.restore();
    const rows = contenders.map((c) => {
      const rps = median(c.runs.map((r) => r.requestsPerSecond));
      const cpu = median(c.runs.flatMap((r) => (r.cpuUsPerRequest === undefined ? [] : [r.cpuUsPerRequest])));
      const peaks = c.pids.map((pid) => memoryKiB(pid).peak);
      const peak = peaks.length === 0 || peaks.includes(undefined) ? undefined : peaks.reduce((a, b) => a! + b!, 0);
      return { c, rps, cpu, peak };
    });
    const one = rows[1];
    const markdown = [
      '# Share pods (bench:share-pod)',
      '',
      '<!-- Generated by `npm run bench:share-pod`; do not edit by hand. -->',
      '',
      ...machineLines(loadBefore),
      `- ${s.rounds} interleaved rounds of ${s.duration} s per contender, wrk -t1 -c${s.connections}, 64-byte answers, keep-alive; ${pinned?.text ?? 'not pinned'}`,
      `- each svc process as the operator runs it: image flags \`${imageNodeFlags().join(' ')}\`, image environment, ${memoryLimits.bytes === undefined ? 'no memory limit' : `a memory cgroup of ${memoryLimits.bytes / 1048576} MiB each`}`,
      '',
      markdownTable(
        ['contender', 'processes', 'req/s (median)', 'pod CPU µs/req (median)', 'vs one container', 'pod peak RSS'],
        rows.map(({ c, rps, cpu, peak }) => [
          c.name,
          String(c.pids.length),
          fixed(rps, 0),
          fixed(cpu, 1),
          c.pids.length === 0 ? '-' : ratio(cpu, one?.cpu),
          c.pids.length === 0 ? '-' : mib(peak),
        ]),
      ),
      '',
    ].join('\n');
    await writeMarkdown(REPORT, markdown);
    process.stdout.write(`${markdown}\nwritten to ${REPORT}\n`);
  } finally {
    await stopAll();
    memoryLimits.removeAll();
    removeScratchDir(dir);
  }
}

/** One wrk run; its completed requests and seconds (all 2xx, or it throws). */
function wrk(
  c: Pick<Contender, 'name' | 'url' | 'headers'>,
  s: { readonly connections: number; readonly duration: number },
): { requests: number; seconds: number } {
  const out = execFileSync(
    'wrk',
    ['-t1', `-c${s.connections}`, `-d${s.duration}`, ...c.headers.flatMap((h) => ['-H', h]), c.url],
    { encoding: 'utf8' },
  );
  const found = /(\d+) requests in ([\d.]+)(m?s)/.exec(out);
  const requests = Number(found?.[1] ?? NaN);
  const seconds = Number(found?.[2] ?? NaN) / (found?.[3] === 'ms' ? 1000 : 1);
  if (/Non-2xx/.test(out) || !(requests > 0) || !(seconds > 0)) throw new Error(`${c.name}: wrk saw errors:\n${out}`);
  return { requests, seconds };
}

await main();
