import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../serve/harness.ts';
import { suiteFigures } from '../support/figures.ts';
import type { ControlPlane } from '../k8s/envtest.ts';
import {
  DOMAIN,
  IMAGE,
  RELEASE_NS,
  api,
  createShare,
  eventually,
  mergePatch,
  paths,
  readyShare,
  sleep,
  startCluster,
  startTestOperator,
} from '../k8s/operator-fixture.ts';

/**
 * The operator against a real kube-apiserver when the API server loses the history a watch would
 * resume from (`410 Gone` after etcd compaction), and when the leading replica is killed without
 * releasing its Lease. (An API server restart mid-watch and a graceful hand-over are covered by
 * test/k8s/operator-resilience.test.ts.)
 */
const figures = suiteFigures('operator');
const clusters: ControlPlane[] = [];
afterAll(async () => {
  figures.write();
  for (const cp of clusters) await cp.stop();
});

describe('watch expiry', () => {
  it('a watch resumed from a compacted resourceVersion relists and reconciles what changed meanwhile', async () => {
    // Without the watch cache, watches are served by etcd itself, which forgets compacted revisions.
    const cp = await startCluster({ apiServerArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'] });
    clusters.push(cp);
    const op = await startTestOperator(cp);
    try {
      await createShare(cp, 'old', { backendMode: 'proxy', target: 'http://one.default.svc' });
      await readyShare(cp, 'old', 1);
      // Move the cluster's revision well past what the operator's watches last saw, and let the
      // compactor (every second) forget it.
      for (let i = 0; i < 20; i++) {
        await api(cp, '/api/v1/namespaces/default/configmaps', {
          method: 'POST',
          body: { metadata: { name: `filler-${i}` }, data: { i: String(i) } },
        });
      }
      await sleep(3_000);
      const goneBefore = await op.metrics.total('watchRestarts', { reason: 'gone' });
      await cp.restartApiServer();
      await mergePatch(cp, paths.share('old'), { spec: { target: 'http://two.default.svc' } });
      await createShare(cp, 'new', { backendMode: 'proxy', target: 'http://three.default.svc' });
      // After the restart the operator's watches first meet 410 Gone and relist (with backoff).
      await readyShare(cp, 'old', 2, 60_000);
      await readyShare(cp, 'new', 1, 60_000);
      const gone = (await op.metrics.total('watchRestarts', { reason: 'gone' })) - goneBefore;
      expect(gone).toBeGreaterThanOrEqual(1);
      figures.fault({
        fault: 'Operator watch expired (410 Gone after etcd compaction, API server restarted)',
        injections: 1,
        outcome: `${gone} watches answered 410 Gone and relisted; a change and a creation made meanwhile were reconciled`,
        lost: 0,
      });
    } finally {
      await op.close();
    }
  }, 240_000);
});

describe('leader killed', () => {
  it('the standby takes over once the killed leader’s Lease expires, and reconciles', async () => {
    const cp = await startCluster();
    clusters.push(cp);
    const replicas: { child: ChildProcess; output: string }[] = [];
    const start = () => {
      const child = spawn(
        join(ROOT, 'node_modules/.bin/node'),
        [
          join(ROOT, 'bin/svc.js'),
          'operator',
          '--leader-elect',
          '--namespace-scope=all',
          `--frontend-secret=${RELEASE_NS}/svc-frontend`,
          `--share-domain=${DOMAIN}`,
          `--image=${IMAGE}`,
          '--metrics-listen=127.0.0.1:0',
        ],
        { cwd: ROOT, env: { ...process.env, KUBECONFIG: cp.kubeconfigPath, SVC_LOG_LEVEL: 'info' }, stdio: 'pipe' },
      );
      const replica = { child, output: '' };
      child.stdout.on('data', (c: Buffer) => (replica.output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (replica.output += c.toString()));
      replicas.push(replica);
      return replica;
    };
    try {
      start();
      start();
      const holder = async (): Promise<{ holderIdentity: string; renewTime: string; leaseDurationSeconds: number }> =>
        (await api(cp, paths.lease())).spec as {
          holderIdentity: string;
          renewTime: string;
          leaseDurationSeconds: number;
        };
      const first = await eventually(async () => (await holder()).holderIdentity || undefined, 'a leader', 60_000);
      const leader = await eventually(
        () => Promise.resolve(replicas.find((r) => r.output.includes(first) && r.output.includes('became leader'))),
        'the leading process',
      );
      await createShare(cp, 'before-kill', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'before-kill', 1);

      const lastRenew = Date.parse((await holder()).renewTime);
      const leaseSeconds = (await holder()).leaseDurationSeconds;
      const killedAt = Date.now();
      leader.child.kill('SIGKILL');
      const next = await eventually(
        async () => {
          const h = await holder();
          return h.holderIdentity !== first ? h.holderIdentity : undefined;
        },
        'another replica holding the Lease',
        60_000,
      );
      const takeoverMs = Date.now() - killedAt;
      const afterExpiryMs = Date.now() - (lastRenew + leaseSeconds * 1000);
      await createShare(cp, 'after-kill', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'after-kill', 1);
      expect(next).not.toBe(first);
      // The standby only acquires after the Lease expired (never two leaders), and within one
      // retry period (2 s, with jitter up to 3 s) of that.
      expect(afterExpiryMs).toBeGreaterThanOrEqual(0);
      expect(afterExpiryMs).toBeLessThan(leaseSeconds * 1000);
      figures.fault({
        fault: 'Operator leader killed (SIGKILL, Lease not released)',
        injections: 1,
        outcome: `standby took the Lease ${(takeoverMs / 1000).toFixed(1)} s after the kill (Lease duration ${leaseSeconds} s; ${(afterExpiryMs / 1000).toFixed(1)} s after it expired) and reconciled a new Share`,
        lost: 0,
      });
    } finally {
      const running = replicas.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
      await Promise.all(
        running.map((r) => {
          const exited = new Promise((res) => r.child.once('exit', res));
          r.child.kill('SIGTERM');
          return exited;
        }),
      );
    }
  }, 240_000);
});
