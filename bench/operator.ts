/**
 * Operator benchmark (not a test): reconcile N Shares (default 1,000) to Ready on a real
 * kube-apiserver + etcd, then measure steady-state CPU with nothing changing and the operator's RSS.
 *
 * The operator runs as its own process (`node bin/svc.js operator ...`), so its CPU and memory are
 * its own; request counts come from its Prometheus /metrics (counted in its client), the CPU of the
 * operator, kube-apiserver, etcd and this process from /proc. Readiness is followed with one watch
 * (an informer), so the measurement itself does not list 1,000 Shares over and over.
 * No kubelet runs: Ready means the children are applied (the pods are never scheduled).
 *
 *   npm run bench:operator                                  # 1,000 shares, 30 s steady state
 *   npm run bench:operator -- --shares 200 --steady 10 --concurrency 8
 *   npm run bench:operator -- --profile                     # + operator --cpu-prof, apiserver pprof
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { startControlPlane } from '../test/k8s/envtest.ts';
import { rawRequest } from '../test/k8s/raw.ts';
import { CRD_FILES, oauthSection } from '../test/k8s/operator-fixture.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { createLogger } from '../lib/logger.ts';
import { SHARES as SHARE_RESOURCE, resourcePath, type Share } from '../lib/kube/resources.ts';
import { Informer, apiSource } from '../lib/kube/informer.ts';
import { coreWait, cpuSeconds, memoryKiB, scratchDir } from './lib/processes.ts';
import { machineLines, markdownTable, writeMarkdown } from './lib/report.ts';
import { summarizeProfiles } from './lib/cpu-profile.ts';
import { goProfileTop, recordApiServerProfile } from './lib/go-profile.ts';
import { intArg } from './lib/load-args.ts';
import { imageEnvironment, imageNodeFlags } from './lib/image.ts';

const { values: flags } = parseArgs({
  options: {
    shares: { type: 'string', default: process.env.SHARES ?? '1000' },
    steady: { type: 'string', default: process.env.STEADY_SECONDS ?? '30' },
    concurrency: { type: 'string', default: process.env.CONCURRENCY ?? '' },
    profile: { type: 'boolean', default: false },
    'pprof-seconds': { type: 'string', default: '30' },
  },
});
const SHARES = intArg('shares', flags.shares, 1, 20_000);
const STEADY_SECONDS = intArg('steady', flags.steady, 1, 3600);
const CONCURRENCY = flags.concurrency ? intArg('concurrency', flags.concurrency, 1, 64) : undefined;
const PPROF_SECONDS = intArg('pprof-seconds', flags['pprof-seconds'], 5, 600);
const OAUTH_EVERY = 5;
const NS = 'bench';
const CREATE_PARALLELISM = 16;
const REPORT = join(import.meta.dirname, '..', 'docs', 'benchmarks', 'operator.md');

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function metricSum(text: string, name: string, filter: (labels: string) => boolean = () => true): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (m && m[1] === name && filter(m[2] ?? '')) sum += Number(m[3]);
  }
  return sum;
}

const isReady = (s: Share): boolean =>
  s.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** CPU seconds of each named process, this one included. */
function cpuOf(pids: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) out[name] = cpuSeconds(pid) ?? NaN;
  const self = process.cpuUsage();
  out.bench = (self.user + self.system) / 1e6;
  return out;
}

async function main(): Promise<void> {
  const started = Date.now();
  const loadBefore = loadavg();
  // Every Share has a ClusterIP Service: the harness's /24 service range would run out at ~250.
  const cp = await startControlPlane({ crds: CRD_FILES, apiServerArgs: ['--service-cluster-ip-range=10.0.0.0/16'] });
  const kc = cp.kubeConfig;
  const api = (path: string, options: Parameters<typeof rawRequest>[2] = {}): Promise<unknown> =>
    rawRequest(kc, path, options);
  const [etcdPid, apiServerPid] = readFileSync(join(cp.dir, 'pids'), 'utf8').trim().split('\n').map(Number);
  const profileDir = flags.profile ? scratchDir('svc-bench-operator-profile') : undefined;
  let operator: ReturnType<typeof spawn> | undefined;
  const client = await KubeClient.create(kc);
  const shares = new Informer<Share>({
    name: 'bench-shares',
    source: apiSource(client, resourcePath(SHARE_RESOURCE, NS)),
    logger: createLogger('bench', { level: 'warn' }),
  });
  try {
    await api('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: 'svc-system' } } });
    await api('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: NS } } });
    await api('/api/v1/namespaces/svc-system/secrets', {
      method: 'POST',
      body: { metadata: { name: 'svc-frontend' }, stringData: { 'oauth.yaml': toYaml({ oauth: oauthSection() }) } },
    });
    console.error(`control plane up in ${Date.now() - started} ms`);

    if (profileDir) mkdirSync(profileDir, { recursive: true });
    operator = spawn(
      process.execPath,
      [
        ...imageNodeFlags(),
        ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
        // SVC_BIN: another checkout's bin/svc.js, to measure before and after under the same load.
        process.env.SVC_BIN ?? join(import.meta.dirname, '..', 'bin', 'svc.js'),
        'operator',
        '--namespace-scope',
        NS,
        '--frontend-secret',
        'svc-system/svc-frontend',
        '--share-domain',
        'share.test',
        '--image',
        'svc:bench',
        '--metrics-listen',
        '127.0.0.1:0',
        ...(CONCURRENCY ? ['--concurrency', String(CONCURRENCY)] : []),
      ],
      {
        // As the image runs it (its ENV lines: malloc arenas, V8 semi-space size).
        env: { ...process.env, ...imageEnvironment(), KUBECONFIG: cp.kubeconfigPath, SVC_LOG_LEVEL: 'info' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const port = await new Promise<number>((resolve, reject) => {
      const lines = createInterface({ input: operator!.stderr! });
      lines.on('line', (line) => {
        if (process.env.OPERATOR_LOG) console.error(line);
        const port = (JSON.parse(line) as { metricsPort?: number }).metricsPort;
        if (port) resolve(port);
      });
      operator!.once('exit', (code) => reject(new Error(`operator exited (${code})`)));
    });
    const pids = { operator: operator.pid!, 'kube-apiserver': apiServerPid!, etcd: etcdPid! };
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    while ((await fetch(`http://127.0.0.1:${port}/readyz`)).status !== 200) await sleep(100);
    let ready = 0;
    let allReady: () => void = () => {};
    const done = new Promise<void>((resolve) => (allReady = resolve));
    const count = (): void => {
      ready = shares.list().filter(isReady).length;
      if (ready === SHARES) allReady();
    };
    shares.on({ onAdd: count, onUpdate: count });
    shares.start();
    const base = await metrics();
    const baseRequests = metricSum(base, 'svc_operator_api_requests_total');
    const cpu0 = cpuOf(pids);
    const waits = (): number[] => Object.values(pids).map((pid) => coreWait(pid)?.waitSeconds ?? NaN);
    const wait0 = waits();

    const t0 = Date.now();
    const pprofFile = profileDir ? join(profileDir, 'kube-apiserver.pprof') : undefined;
    const pprof = pprofFile ? recordApiServerProfile(kc, PPROF_SECONDS, pprofFile) : undefined;
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_PARALLELISM }, async () => {
        while (next < SHARES) {
          const i = next++;
          const spec: Record<string, unknown> = { backendMode: 'proxy', target: `http://app-${i}.${NS}.svc:8080` };
          if (i % OAUTH_EVERY === 0) spec.oauth = { provider: 'dev', emailAddressPatterns: ['*@example.com'] };
          // One keep-alive client: a TLS handshake per create would be the bench's cost, not the operator's.
          await client.create(resourcePath(SHARE_RESOURCE, NS), {
            apiVersion: 'svc.dev/v1alpha1',
            kind: 'Share',
            metadata: { name: `s-${i}` },
            spec,
          });
        }
      }),
    );
    const created = Date.now() - t0;
    const timeout = setTimeout(() => {
      console.error(`only ${ready}/${SHARES} Ready after 30 min`);
      process.exit(1);
    }, 30 * 60_000);
    await done;
    clearTimeout(timeout);
    const allReadyMs = Date.now() - t0;
    const cpu1 = cpuOf(pids);
    const waited = waits().map((w, i) => w - wait0[i]!);
    const afterReconcile = await metrics();
    const reconcileRequests = metricSum(afterReconcile, 'svc_operator_api_requests_total') - baseRequests;
    const verbCount = (verb: string): number =>
      metricSum(afterReconcile, 'svc_operator_api_requests_total', (l) => l.includes(`verb="${verb}"`)) -
      metricSum(base, 'svc_operator_api_requests_total', (l) => l.includes(`verb="${verb}"`));
    const byVerb = ['GET', 'PATCH', 'POST', 'PUT', 'DELETE'].map((verb) => `${verb} ${verbCount(verb)}`);
    const reconciles = metricSum(afterReconcile, 'svc_operator_reconcile_total', (l) => l.includes('kind="Share"'));
    const operatorPeak = memoryKiB(pids.operator).peak;

    await sleep(5000); // settle: trailing child events, status writes
    const s0 = await metrics();
    const steady0 = cpuOf(pids);
    const req0 = metricSum(s0, 'svc_operator_api_requests_total');
    const rec0 = metricSum(s0, 'svc_operator_reconcile_total');
    await sleep(STEADY_SECONDS * 1000);
    const s1 = await metrics();
    const steady1 = cpuOf(pids);
    const steadyPercent = (name: string): string =>
      `${(((steady1[name]! - steady0[name]!) / STEADY_SECONDS) * 100).toFixed(2)} %`;
    const steadyRequests = metricSum(s1, 'svc_operator_api_requests_total') - req0;
    const steadyReconciles = metricSum(s1, 'svc_operator_reconcile_total') - rec0;
    const rssMiB = metricSum(s1, 'svc_operator_process_resident_memory_bytes') / 2 ** 20;
    const heapMiB = metricSum(s1, 'svc_operator_nodejs_heap_size_used_bytes') / 2 ** 20;

    const phaseCpu = (name: string): number => cpu1[name]! - cpu0[name]!;
    const perShareMs = (name: string): string => ((phaseCpu(name) / SHARES) * 1000).toFixed(2);
    const rows = [
      ['Shares (every 5th with OAuth: +1 Secret)', `${SHARES}`],
      ['Operator `--concurrency`', `${CONCURRENCY ?? "the operator's default"}`],
      ['Creating them (bench client, 16 in parallel)', `${(created / 1000).toFixed(1)} s`],
      ['**All Ready (from first create)**', `**${(allReadyMs / 1000).toFixed(1)} s**`],
      [
        'API requests by the operator until all Ready',
        `${reconcileRequests} (${(reconcileRequests / SHARES).toFixed(2)}/share; ${byVerb.join(', ')})`,
      ],
      ['Share reconciles until all Ready', `${reconciles}`],
      ...['operator', 'kube-apiserver', 'etcd', 'bench'].map((name) => [
        `CPU until all Ready: ${name === 'bench' ? 'bench client (creates + watch)' : name}`,
        `${phaseCpu(name).toFixed(1)} s (${perShareMs(name)} ms/share, ${((phaseCpu(name) / allReadyMs) * 100_000).toFixed(0)} % of one core)`,
      ]),
      [
        'Waiting for a CPU until all Ready (run queue): operator / kube-apiserver / etcd',
        `${waited.map((w) => `${w.toFixed(1)} s`).join(' / ')} (threads summed; the machine's load)`,
      ],
      [`Steady state over ${STEADY_SECONDS} s: operator CPU`, `${steadyPercent('operator')} of one core`],
      [
        `Steady state over ${STEADY_SECONDS} s: kube-apiserver / etcd CPU`,
        `${steadyPercent('kube-apiserver')} / ${steadyPercent('etcd')} of one core`,
      ],
      [`Steady state over ${STEADY_SECONDS} s: API requests / reconciles`, `${steadyRequests} / ${steadyReconciles}`],
      [
        'Operator RSS / JS heap used (after); peak RSS',
        `${rssMiB.toFixed(0)} MiB / ${heapMiB.toFixed(0)} MiB; ${((operatorPeak ?? NaN) / 1024).toFixed(0)} MiB`,
      ],
    ];
    const table = markdownTable(['Measure', 'Value'], rows);
    console.log(table);

    const sections = [
      '# Operator benchmark',
      '',
      'Written by `npm run bench:operator` (`bench/operator.ts`); see [../benchmarks.md](../benchmarks.md#operator).',
      '',
      ...machineLines(loadBefore),
      '',
      table,
    ];
    if (operator.exitCode === null) {
      operator.kill('SIGTERM');
      await new Promise((r) => operator!.once('exit', r));
    }
    if (profileDir && pprof && pprofFile) {
      await pprof.catch((err: unknown) => console.error(`apiserver profile failed: ${String(err)}`));
      const summary = summarizeProfiles(profileDir, 15);
      const entries = (list: readonly { name: string; share: number }[]): string[] =>
        list.map((e) => `- ${(e.share * 100).toFixed(1)} % ${e.name}`);
      const top = goProfileTop(pprofFile);
      sections.push(
        '',
        '## Profiles (profiled run: the profilers cost CPU of their own)',
        '',
        `Operator (\`node --cpu-prof\`, whole life, ${summary.busyMs.toFixed(0)} ms busy), self time by function:`,
        '',
        ...entries(summary.frames),
        '',
        'by module:',
        '',
        ...entries(summary.modules),
        '',
        `kube-apiserver (\`/debug/pprof/profile\`, the first ${PPROF_SECONDS} s from the first create), \`go tool pprof -top\`:`,
        '',
        '```text',
        top,
        '```',
      );
      console.log(sections.slice(sections.indexOf(table) + 1).join('\n'));
    }
    await writeMarkdown(REPORT, sections.join('\n') + '\n');
    console.error(`wrote ${REPORT}`);
  } finally {
    await shares.stop();
    client.close();
    if (operator && operator.exitCode === null) {
      operator.kill('SIGTERM');
      await new Promise((r) => operator!.once('exit', r));
    }
    await cp.stop();
  }
}

await main();
