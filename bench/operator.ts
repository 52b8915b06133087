/**
 * Operator benchmark (not a test): reconcile N Shares (default 1,000) to Ready on a real
 * kube-apiserver + etcd, then measure steady-state CPU with nothing changing and the operator's RSS.
 *
 * The operator runs as its own process (`node bin/svc.js operator ...`), so its CPU and memory are
 * its own; all figures come from its Prometheus /metrics (API requests are counted in its client).
 * No kubelet runs: Ready means the children are applied (the pods are never scheduled).
 *
 *   npm run bench:operator                 # 1,000 shares, 30 s steady state
 *   SHARES=200 STEADY_SECONDS=10 npm run bench:operator
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { startControlPlane } from '../test/k8s/envtest.ts';
import { rawRequest } from '../test/k8s/raw.ts';
import { CRD_FILES, oauthSection } from '../test/k8s/operator-fixture.ts';

const SHARES = Number(process.env.SHARES ?? 1000);
const STEADY_SECONDS = Number(process.env.STEADY_SECONDS ?? 30);
const OAUTH_EVERY = 5;
const NS = 'bench';
const CREATE_PARALLELISM = 16;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function metricSum(text: string, name: string, filter: (labels: string) => boolean = () => true): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (m && m[1] === name && filter(m[2] ?? '')) sum += Number(m[3]);
  }
  return sum;
}

async function main(): Promise<void> {
  const started = Date.now();
  // Every Share has a ClusterIP Service: the harness's /24 service range would run out at ~250.
  const cp = await startControlPlane({ crds: CRD_FILES, apiServerArgs: ['--service-cluster-ip-range=10.0.0.0/16'] });
  const kc = cp.kubeConfig;
  const api = (path: string, options: Parameters<typeof rawRequest>[2] = {}): Promise<unknown> =>
    rawRequest(kc, path, options);
  let operator: ReturnType<typeof spawn> | undefined;
  try {
    await api('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: 'svc-system' } } });
    await api('/api/v1/namespaces', { method: 'POST', body: { metadata: { name: NS } } });
    await api('/api/v1/namespaces/svc-system/secrets', {
      method: 'POST',
      body: { metadata: { name: 'svc-frontend' }, stringData: { 'oauth.yaml': toYaml({ oauth: oauthSection() }) } },
    });
    console.error(`control plane up in ${Date.now() - started} ms`);

    operator = spawn(
      process.execPath,
      [
        join(import.meta.dirname, '..', 'bin', 'svc.js'),
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
      ],
      {
        env: { ...process.env, KUBECONFIG: cp.kubeconfigPath, SVC_LOG_LEVEL: 'info' },
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
    const metrics = async (): Promise<string> => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    while ((await fetch(`http://127.0.0.1:${port}/readyz`)).status !== 200) await sleep(100);
    const base = await metrics();
    const baseRequests = metricSum(base, 'svc_operator_api_requests_total');

    const t0 = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATE_PARALLELISM }, async () => {
        while (next < SHARES) {
          const i = next++;
          const spec: Record<string, unknown> = { backendMode: 'proxy', target: `http://app-${i}.${NS}.svc:8080` };
          if (i % OAUTH_EVERY === 0) spec.oauth = { provider: 'dev', emailAddressPatterns: ['*@example.com'] };
          await api(`/apis/svc.dev/v1alpha1/namespaces/${NS}/shares`, {
            method: 'POST',
            body: { apiVersion: 'svc.dev/v1alpha1', kind: 'Share', metadata: { name: `s-${i}` }, spec },
          });
        }
      }),
    );
    const created = Date.now() - t0;
    let ready = 0;
    for (;;) {
      const list = (await api(`/apis/svc.dev/v1alpha1/namespaces/${NS}/shares`)) as {
        items: { status?: { conditions?: { type: string; status: string }[] } }[];
      };
      ready = list.items.filter((s) =>
        s.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      ).length;
      if (ready === SHARES) break;
      if (Date.now() - t0 > 30 * 60_000) throw new Error(`only ${ready}/${SHARES} Ready after 30 min`);
      await sleep(1000); // listing 1,000 Shares is not free for the API server: poll gently
    }
    const allReady = Date.now() - t0;
    const afterReconcile = await metrics();
    const reconcileRequests = metricSum(afterReconcile, 'svc_operator_api_requests_total') - baseRequests;
    const byVerb = ['GET', 'PATCH', 'POST', 'PUT', 'DELETE', 'WATCH'].map(
      (verb) =>
        `${verb} ${metricSum(afterReconcile, 'svc_operator_api_requests_total', (l) => l.includes(`verb="${verb}"`)) - metricSum(base, 'svc_operator_api_requests_total', (l) => l.includes(`verb="${verb}"`))}`,
    );
    const reconciles = metricSum(afterReconcile, 'svc_operator_reconcile_total', (l) => l.includes('kind="Share"'));

    await sleep(5000); // settle: trailing child events, status writes
    const s0 = await metrics();
    const cpu0 = metricSum(s0, 'svc_operator_process_cpu_seconds_total');
    const req0 = metricSum(s0, 'svc_operator_api_requests_total');
    const rec0 = metricSum(s0, 'svc_operator_reconcile_total');
    await sleep(STEADY_SECONDS * 1000);
    const s1 = await metrics();
    const cpuPercent = ((metricSum(s1, 'svc_operator_process_cpu_seconds_total') - cpu0) / STEADY_SECONDS) * 100;
    const steadyRequests = metricSum(s1, 'svc_operator_api_requests_total') - req0;
    const steadyReconciles = metricSum(s1, 'svc_operator_reconcile_total') - rec0;
    const rssMiB = metricSum(s1, 'svc_operator_process_resident_memory_bytes') / 2 ** 20;
    const heapMiB = metricSum(s1, 'svc_operator_nodejs_heap_size_used_bytes') / 2 ** 20;

    const rows = [
      ['Shares (every 5th with OAuth: +1 Secret)', `${SHARES}`],
      ['Creating them (bench client, 16 in parallel)', `${(created / 1000).toFixed(1)} s`],
      ['All Ready (from first create)', `${(allReady / 1000).toFixed(1)} s`],
      [
        'API requests by the operator until all Ready',
        `${reconcileRequests} (${(reconcileRequests / SHARES).toFixed(2)}/share; ${byVerb.join(', ')})`,
      ],
      ['Share reconciles until all Ready', `${reconciles}`],
      [`Steady state over ${STEADY_SECONDS} s: operator CPU`, `${cpuPercent.toFixed(2)} % of one core`],
      [`Steady state over ${STEADY_SECONDS} s: API requests / reconciles`, `${steadyRequests} / ${steadyReconciles}`],
      ['Operator RSS / JS heap used (after)', `${rssMiB.toFixed(0)} MiB / ${heapMiB.toFixed(0)} MiB`],
    ];
    console.log('| Measure | Value |\n|---|---|');
    for (const [k, v] of rows) console.log(`| ${k} | ${v} |`);
  } finally {
    if (operator && operator.exitCode === null) {
      operator.kill('SIGTERM');
      await new Promise((r) => operator!.once('exit', r));
    }
    await cp.stop();
  }
}

await main();
