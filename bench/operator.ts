/**
 * Operator benchmark (not a test): reconcile N Shares (default 1,000) to Ready on a real
 * kube-apiserver + etcd, then measure steady-state CPU with nothing changing and the operator's RSS.
 *
 * The operator runs as its own process (`node bin/svc.js operator ...`), so its CPU and memory are
 * its own; request counts come from its Prometheus /metrics (counted in its client), the CPU of the
 * operator, kube-apiserver, etcd and this process from /proc. Readiness is followed with one watch
 * (an informer), so the measurement itself does not list 1,000 Shares over and over.
 * No kubelet or Deployment controller runs: the bench stands in for them, writing each Deployment's
 * status as available once it appears (as a running pod would make it), so Ready is the operator's
 * real Ready (children applied, Deployment available) without scheduling pods.
 *
 *   npm run bench:operator                                  # 1,000 shares, 30 s steady state
 *   npm run bench:operator -- --shares 200 --steady 10 --concurrency 8
 *   npm run bench:operator -- --profile                     # + operator --cpu-prof, apiserver pprof
 *   npm run bench:operator -- --shares 5000 --compare-whole # + RSS of a restart caching whole objects vs trimmed
 *
 * `--compare-whole` restarts the operator twice on the Ready Shares, once caching whole objects
 * (`SVC_OPERATOR_CACHE_WHOLE_OBJECTS=1`) and once trimmed (operator/cache-trim.ts), and reads each
 * one's RSS and JS heap once its caches are synced and its start-up reconciles are done: the same
 * objects, the same work, only the caches differ.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import WebSocket from 'ws';
import { startControlPlane } from '../test/k8s/envtest.ts';
import { rawRequest } from '../test/k8s/raw.ts';
import { CRD_FILES, oauthSection } from '../test/k8s/operator-fixture.ts';
import { availableDeploymentStatus } from '../test/support/deployment-status.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { createLogger } from '../lib/logger.ts';
import {
  DEPLOYMENTS,
  SHARES as SHARE_RESOURCE,
  objectPath,
  resourcePath,
  type KubeObject,
  type Share,
} from '../lib/kube/resources.ts';
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
    'create-concurrency': { type: 'string', default: '16' },
    profile: { type: 'boolean', default: false },
    'compare-whole': { type: 'boolean', default: false },
    'pprof-seconds': { type: 'string', default: '30' },
  },
});
const SHARES = intArg('shares', flags.shares, 1, 20_000);
const STEADY_SECONDS = intArg('steady', flags.steady, 1, 3600);
const CONCURRENCY = flags.concurrency ? intArg('concurrency', flags.concurrency, 1, 64) : undefined;
const PPROF_SECONDS = intArg('pprof-seconds', flags['pprof-seconds'], 5, 600);
const OAUTH_EVERY = 5;
const NS = 'bench';
const CREATE_PARALLELISM = intArg('create-concurrency', flags['create-concurrency'], 1, 64);
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

const STATUS_WRITERS = 8;

/**
 * Stands in for the Deployment controller and the kubelet: every Deployment in the informer that
 * does not say it is available at its generation gets a status saying one replica is (merge
 * patch of the status subresource, a few at a time). Returns how to stop it.
 */
function reportDeploymentsAvailable(client: KubeClient, deployments: Informer): () => Promise<void> {
  const pending = new Map<string, KubeObject>();
  const idle: (() => void)[] = [];
  const wake = (): void => idle.shift()?.();
  let stopped = false;
  const consider = (d: KubeObject): void => {
    const status = d.status as { observedGeneration?: number; availableReplicas?: number } | undefined;
    const generation = d.metadata.generation ?? 1;
    if (status?.observedGeneration === generation && (status.availableReplicas ?? 0) >= 1) return;
    pending.set(`${d.metadata.namespace ?? ''}/${d.metadata.name}`, d);
    wake();
  };
  deployments.on({ onAdd: consider, onUpdate: (_old, d) => consider(d) });
  const worker = async (): Promise<void> => {
    while (!stopped) {
      const next = pending.entries().next();
      if (next.done) {
        await new Promise<void>((resolve) => idle.push(resolve));
        continue;
      }
      const [key, d] = next.value;
      pending.delete(key);
      await client
        .request('PATCH', objectPath(DEPLOYMENTS, d, 'status'), {
          contentType: 'application/merge-patch+json',
          body: { status: availableDeploymentStatus(d.metadata.generation ?? 1) },
        })
        .catch((err: unknown) => console.error(`deployment status ${key}: ${String(err)}`));
    }
  };
  const workers = Array.from({ length: STATUS_WRITERS }, worker);
  deployments.start();
  return async () => {
    stopped = true;
    for (const resume of idle.splice(0)) resume();
    await Promise.all(workers);
    await deployments.stop();
  };
}

/** CPU seconds of each named process, this one included. */
function cpuOf(pids: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) out[name] = cpuSeconds(pid) ?? NaN;
  const self = process.cpuUsage();
  out.bench = (self.user + self.system) / 1e6;
  return out;
}

/** Runs a full garbage collection in the process whose inspector listens at `inspector` (CDP). */
async function collectGarbage(inspector: string): Promise<void> {
  const ws = new WebSocket(inspector);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  await new Promise<void>((resolve) => {
    ws.on('message', (data: Buffer) => {
      if ((JSON.parse(data.toString()) as { id?: number }).id === 1) resolve();
    });
    ws.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
  });
  ws.close();
}

interface SettledMemory {
  rssMiB: number;
  heapMiB: number;
  reconciles: number;
  requests: number;
}

/**
 * The operator's RSS and JS heap used once it is ready (caches synced), its reconciles stopped (no
 * new one over two 2 s polls) and a full garbage collection ran: what it holds, not what its
 * start-up left for the collector. Also its reconciles and API requests until then.
 */
async function settledMemory(port: number, inspector: string): Promise<SettledMemory> {
  const url = `http://127.0.0.1:${port}`;
  while ((await fetch(`${url}/readyz`)).status !== 200) await sleep(200);
  const reconciles = async (): Promise<number> =>
    metricSum(await (await fetch(`${url}/metrics`)).text(), 'svc_operator_reconcile_total');
  let last = -1;
  let quiet = 0;
  while (quiet < 2) {
    await sleep(2000);
    const now = await reconciles();
    quiet = now === last && now > 0 ? quiet + 1 : 0;
    last = now;
  }
  await collectGarbage(inspector);
  await sleep(1000);
  const text = await (await fetch(`${url}/metrics`)).text();
  return {
    rssMiB: metricSum(text, 'svc_operator_process_resident_memory_bytes') / 2 ** 20,
    heapMiB: metricSum(text, 'svc_operator_nodejs_heap_size_used_bytes') / 2 ** 20,
    reconciles: last,
    requests: metricSum(text, 'svc_operator_api_requests_total', (l) => !l.includes('verb="WATCH"')),
  };
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
  const stopOperator = async (): Promise<void> => {
    if (operator && operator.exitCode === null) {
      const exited = new Promise((r) => operator!.once('exit', r));
      operator.kill('SIGTERM');
      await exited;
    }
  };
  const client = await KubeClient.create(kc);
  const shares = new Informer<Share>({
    name: 'bench-shares',
    source: apiSource(client, resourcePath(SHARE_RESOURCE, NS)),
    logger: createLogger('bench', { level: 'warn' }),
  });
  let stopStatusWriter: () => Promise<void> = () => Promise.resolve();
  try {
    await api('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: 'svc-system' } } });
    await api('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: NS } } });
    await api('/api/v1/namespaces/svc-system/secrets', {
      method: 'POST',
      body: { metadata: { name: 'svc-frontend' }, stringData: { 'oauth.yaml': toYaml({ oauth: oauthSection() }) } },
    });
    console.error(`control plane up in ${Date.now() - started} ms`);

    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const spawnOperator = async (
      env: Record<string, string> = {},
      profile = profileDir,
      inspect = false,
    ): Promise<{ child: ReturnType<typeof spawn>; port: number; inspector: string }> => {
      const child = spawn(
        process.execPath,
        [
          ...imageNodeFlags(),
          ...(profile ? ['--cpu-prof', '--cpu-prof-dir', profile] : []),
          ...(inspect ? ['--inspect=127.0.0.1:0'] : []),
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
          env: { ...process.env, ...imageEnvironment(), ...env, KUBECONFIG: cp.kubeconfigPath, SVC_LOG_LEVEL: 'info' },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      operator = child;
      let inspector = '';
      const port = await new Promise<number>((resolve, reject) => {
        const lines = createInterface({ input: child.stderr });
        lines.on('line', (line) => {
          if (process.env.OPERATOR_LOG) console.error(line);
          inspector ||= /^Debugger listening on (ws:\S+)/.exec(line)?.[1] ?? '';
          if (!line.startsWith('{')) return;
          const port = (JSON.parse(line) as { metricsPort?: number }).metricsPort;
          if (port) resolve(port);
        });
        child.once('exit', (code) => reject(new Error(`operator exited (${code})`)));
      });
      return { child, port, inspector };
    };
    const first = await spawnOperator();
    const { port } = first;
    const pids = { operator: first.child.pid!, 'kube-apiserver': apiServerPid!, etcd: etcdPid! };
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
    stopStatusWriter = reportDeploymentsAvailable(
      client,
      new Informer({
        name: 'bench-deployments',
        source: apiSource(client, resourcePath(DEPLOYMENTS, NS)),
        logger: createLogger('bench', { level: 'warn' }),
      }),
    );
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
      [`Creating them (bench client, ${CREATE_PARALLELISM} in parallel)`, `${(created / 1000).toFixed(1)} s`],
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
    if (flags['compare-whole']) {
      await stopOperator();
      for (const [label, env] of [
        ['whole objects', { SVC_OPERATOR_CACHE_WHOLE_OBJECTS: '1' }],
        ['trimmed (operator/cache-trim.ts)', {}],
      ] as const) {
        const restarted = await spawnOperator(env, undefined, true);
        const memory = await settledMemory(restarted.port, restarted.inspector);
        rows.push([
          `Restarted on the ${SHARES} Ready Shares, caching ${label}: RSS / JS heap used after a full GC (caches synced, start-up reconciles done); API requests until then`,
          `${memory.rssMiB.toFixed(0)} MiB / ${memory.heapMiB.toFixed(0)} MiB (${memory.reconciles} reconciles); ${memory.requests}`,
        ]);
        await stopOperator();
      }
    }
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
    await stopOperator();
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
    await stopStatusWriter();
    await shares.stop();
    client.close();
    await stopOperator();
    await cp.stop();
  }
}

await main();
