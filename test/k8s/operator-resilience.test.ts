import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { microTime } from '../../lib/kube/lease.ts';
import type { ControlPlane } from './envtest.ts';
import {
  api,
  container,
  createShare,
  eventually,
  getOrNone,
  mergePatch,
  paths,
  readyShare,
  sleep,
  startCluster,
  startTestOperator,
  type TestOperator,
} from './operator-fixture.ts';

let cp: ControlPlane;

beforeAll(async () => {
  cp = await startCluster();
}, 180_000);

afterAll(async () => {
  await cp?.stop();
});

async function httpText(port: number, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, text: await res.text() };
}

describe('operator resilience on a real API server', () => {
  it('serves /healthz, /readyz and Prometheus /metrics', async () => {
    const op = await startTestOperator(cp);
    try {
      await eventually(async () => (await httpText(op.metricsPort, '/readyz')).status === 200, 'ready');
      expect((await httpText(op.metricsPort, '/healthz')).text).toContain('ok');
      const metrics = (await httpText(op.metricsPort, '/metrics')).text;
      for (const name of [
        'svc_operator_reconcile_total',
        'svc_operator_workqueue_depth',
        'svc_operator_reconcile_duration_seconds',
        'svc_operator_api_requests_total',
      ]) {
        expect(metrics).toContain(name);
      }
      expect(metrics).toMatch(/svc_operator_api_requests_total\{verb="GET",code="200"\} \d+/);

      // An AgentEnrollment whose controller is unreachable must not disturb Share reconciliation.
      await api(cp, '/apis/svc.dev/v1alpha1/namespaces/default/agentenrollments', {
        method: 'POST',
        body: {
          apiVersion: 'svc.dev/v1alpha1',
          kind: 'AgentEnrollment',
          metadata: { name: 'env-1' },
          spec: {
            controllerUrl: 'https://controller.example.com',
            accountTokenSecretRef: { name: 'account', key: 'token' },
          },
        },
      });
      await createShare(cp, 'after-enrollment', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'after-enrollment', 1);
      expect((await httpText(op.metricsPort, '/readyz')).status).toBe(200);
    } finally {
      await op.close();
    }
  });

  it('survives an API server restart mid-watch and reconciles what changed meanwhile', async () => {
    const op = await startTestOperator(cp);
    try {
      await createShare(cp, 'steady', { backendMode: 'proxy', target: 'http://one.default.svc' });
      await readyShare(cp, 'steady', 1);
      const failedBefore = await op.metrics.total('apiRequests', { code: '0' });

      await cp.restartApiServer();
      // Changed right after the API server is back: the operator's watches are still broken
      // (reconnecting with backoff), so it only learns of these by resuming or relisting.
      await mergePatch(cp, paths.share('steady'), { spec: { target: 'http://two.default.svc' } });
      await createShare(cp, 'while-away', { backendMode: 'proxy', target: 'http://three.default.svc' });

      await readyShare(cp, 'steady', 2);
      await readyShare(cp, 'while-away', 1);
      expect(container(await api(cp, paths.deployment('svc-share-steady')), 'agent')?.args).toContain(
        'http://two.default.svc',
      );
      expect(await getOrNone(cp, paths.deployment('svc-share-while-away'))).toBeDefined();

      const restarts =
        (await op.metrics.total('watchRestarts', { reason: 'error' })) +
        (await op.metrics.total('watchRestarts', { reason: 'closed' }));
      expect(restarts).toBeGreaterThanOrEqual(7);
      // No flood: 7 watches retrying with backoff during the outage.
      const failed = (await op.metrics.total('apiRequests', { code: '0' })) - failedBefore;
      expect(failed).toBeLessThan(100);
      expect(op.logs()).toContain('watch failed, retrying');
    } finally {
      await op.close();
    }
  }, 120_000);

  it('with leader election, two replicas never both reconcile and a standby takes over', async () => {
    const timings = { leaderElect: true, leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 500 };
    const a = await startTestOperator(cp, timings);
    const b = await startTestOperator(cp, timings);
    const ops: TestOperator[] = [a, b];
    let both = 0;
    let samples = 0;
    const sampler = setInterval(() => {
      samples++;
      if (ops.filter((o) => o.isLeader()).length > 1) both++;
    }, 25);
    try {
      const first = await eventually(() => Promise.resolve(ops.find((o) => o.isLeader())), 'a leader', 30_000);
      const standby = first === a ? b : a;
      const lease = await api(cp, paths.lease());
      expect((lease.spec as { holderIdentity: string }).holderIdentity).toBe(first.identity);
      expect((await httpText(standby.metricsPort, '/readyz')).text).toContain('standing by');

      await createShare(cp, 'le-one', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'le-one', 1);
      await sleep(1000);
      expect(await first.metrics.total('reconciles', { kind: 'Share' })).toBeGreaterThan(0);
      expect(await standby.metrics.total('reconciles', { kind: 'Share' })).toBe(0);

      // Someone else takes the lease: the leader must stop at once, and nobody leads until it expires.
      await eventually(async () => {
        const current = await api(cp, paths.lease());
        const spec = {
          ...(current.spec as object),
          holderIdentity: 'intruder',
          renewTime: microTime(new Date()),
          leaseDurationSeconds: 4,
        };
        return await api(cp, paths.lease(), { method: 'PUT', body: { ...current, spec } });
      }, 'the lease taken by an intruder');
      await eventually(() => Promise.resolve(!first.isLeader() || undefined), 'the leader stepping down', 10_000);
      // Having lost the lease it exits non-zero (its process restarts as a standby): restart it here.
      expect(await first.exited).toBe(1);
      expect(first.logs()).toContain('lost the leader lease');
      await first.close();
      ops.splice(ops.indexOf(first), 1, await startTestOperator(cp, timings));
      const next = await eventually(
        () => Promise.resolve(ops.find((o) => o.isLeader())),
        'a new leader after the stolen lease expired',
        30_000,
      );
      await createShare(cp, 'le-two', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'le-two', 1);

      // The leader shuts down and releases the lease: the other replica takes over without waiting for expiry.
      const other = ops.find((o) => o !== next) as TestOperator;
      const otherBefore = await other.metrics.total('reconciles', { kind: 'Share' });
      await next.close();
      ops.splice(ops.indexOf(next), 1);
      await eventually(() => Promise.resolve(other.isLeader() || undefined), 'the standby taking over', 10_000);
      await createShare(cp, 'le-three', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'le-three', 1);
      expect(await other.metrics.total('reconciles', { kind: 'Share' })).toBeGreaterThan(otherBefore);
      expect(((await api(cp, paths.lease())).spec as { holderIdentity: string }).holderIdentity).toBe(other.identity);
    } finally {
      clearInterval(sampler);
      for (const o of ops) await o.close();
    }
    expect(samples).toBeGreaterThan(100);
    expect(both).toBe(0);
  }, 120_000);
});
