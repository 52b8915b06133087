import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeControllerStore } from '../../controller/kube-store.ts';
import { startController } from '../../controller/start.ts';
import { newSecretToken } from '../../controller/tokens.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { createLogger } from '../../lib/logger.ts';
import { suiteFigures } from '../support/figures.ts';
import type { ControlPlane } from '../k8s/envtest.ts';
import {
  createShare,
  eventually,
  readyShare,
  startCluster,
  startTestOperator,
  type TestOperator,
} from '../k8s/operator-fixture.ts';
import { startStallProxy, type StallProxy } from '../k8s/stall-proxy.ts';

/**
 * The operator when its connection to a real kube-apiserver is black-holed (a TCP proxy that
 * silently stops forwarding, as a partition or a dead load balancer does: no error, no reset).
 * Every API call has a deadline and every watch an idle deadline, so nothing hangs; `/healthz`
 * fails while the informers hear nothing (the kubelet would restart the process) and recovers with
 * the network; a leader that cannot renew steps down within a deadline and exits. The controller
 * (Kubernetes store) likewise fails `/healthz` while its store answers nothing.
 */
const figures = suiteFigures('operator-api-stall');
let cp: ControlPlane;

beforeAll(async () => {
  cp = await startCluster();
}, 180_000);

afterAll(async () => {
  figures.write();
  await cp?.stop();
});

async function healthz(op: TestOperator): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${op.metricsPort}/healthz`);
  return { status: res.status, text: await res.text() };
}

/** Tight deadlines, so the test takes seconds: the same code paths as the defaults (30 s, 5-10 min). */
const timings = {
  requestTimeoutMs: 1000,
  watchTimeoutSeconds: 2,
  watchStallMs: 6000,
  watchBackoff: { baseMs: 200, maxMs: 1000 },
  reconcileBackoff: { baseMs: 200, maxMs: 1000 },
};

describe('operator with a black-holed API server connection', () => {
  let proxy: StallProxy;
  beforeAll(async () => {
    proxy = await startStallProxy(cp.kubeConfig);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('fails /healthz while no API call gets through, and recovers on its own once the network heals', async () => {
    const op = await startTestOperator(cp, { kubeConfig: proxy.kubeConfig, ...timings });
    try {
      await createShare(cp, 'before', { backendMode: 'proxy', target: 'http://x.default.svc' });
      await readyShare(cp, 'before', 1);
      expect(await healthz(op)).toEqual({ status: 200, text: 'ok\n' });
      const failedBefore = await op.metrics.total('apiRequests', { code: '0' });

      const stalledAt = Date.now();
      proxy.stall();
      const wedged = await eventually(
        async () => {
          const h = await healthz(op);
          return h.status === 503 ? h : undefined;
        },
        '/healthz failing',
        30_000,
      );
      const detectedMs = Date.now() - stalledAt;
      expect(wedged.text).toMatch(/^wedged: the \w+ informer has had no answer from the API server for \d+ s\n$/);
      // The calls and watches end (time out, are dropped as idle) instead of hanging.
      const failed = await eventually(
        async () => {
          const n = (await op.metrics.total('apiRequests', { code: '0' })) - failedBefore;
          return n > 0 ? n : undefined;
        },
        'API calls ending at their deadline',
        30_000,
      );
      await createShare(cp, 'during', { backendMode: 'proxy', target: 'http://y.default.svc' });

      // The partition heals; the stalled connections stay dead, new ones pass.
      const healedAt = Date.now();
      proxy.pass();
      await eventually(async () => (await healthz(op)).status === 200, '/healthz ok again', 30_000);
      await readyShare(cp, 'during', 1);
      const recoveredMs = Date.now() - healedAt;
      expect(op.logs()).toContain('watch failed, retrying');
      figures.fault({
        fault: 'Operator API server connection black-holed (no error, no reset), then healed',
        injections: 1,
        outcome: `/healthz failed ${(detectedMs / 1000).toFixed(1)} s after the stall (watch stall limit ${timings.watchStallMs / 1000} s; ${failed} calls ended by their deadlines); after healing, /healthz ok and a Share created meanwhile Ready within ${(recoveredMs / 1000).toFixed(1)} s`,
        lost: 0,
      });
    } finally {
      proxy.pass();
      await op.close();
    }
  }, 120_000);

  it('a leader that cannot renew its Lease steps down within the deadline and exits non-zero', async () => {
    const leader = await startTestOperator(cp, {
      kubeConfig: proxy.kubeConfig,
      ...timings,
      leaderElect: true,
      leaseDurationMs: 4000,
      renewDeadlineMs: 2500,
      retryPeriodMs: 500,
    });
    let standby: TestOperator | undefined;
    try {
      await eventually(() => Promise.resolve(leader.isLeader() || undefined), 'the first replica leading', 30_000);
      standby = await startTestOperator(cp, {
        ...timings,
        leaderElect: true,
        leaseDurationMs: 4000,
        renewDeadlineMs: 2500,
        retryPeriodMs: 500,
      });

      const stalledAt = Date.now();
      proxy.stall();
      const code = await Promise.race([
        leader.exited,
        new Promise<'still running'>((r) => setTimeout(() => r('still running'), 15_000)),
      ]);
      const exitMs = Date.now() - stalledAt;
      expect(code).toBe(1);
      expect(leader.isLeader()).toBe(false);
      expect(leader.logs()).toContain('stopped leading: lost the lease');
      expect(leader.logs()).toMatch(/lost the leader lease: (reconciles stopped|\d+ reconciles still running)/);

      const next = standby;
      await eventually(() => Promise.resolve(next.isLeader() || undefined), 'the standby leading', 30_000);
      await createShare(cp, 'after-step-down', { backendMode: 'proxy', target: 'http://z.default.svc' });
      await readyShare(cp, 'after-step-down', 1);
      figures.fault({
        fault: 'Operator leader black-holed from the API server (cannot renew its Lease)',
        injections: 1,
        outcome: `stepped down and exited 1 ${(exitMs / 1000).toFixed(1)} s after the stall (renew deadline 2.5 s, step-down deadline 1.5 s); the standby took over and reconciled a new Share`,
        lost: 0,
      });
    } finally {
      proxy.pass();
      await leader.close();
      await standby?.close();
    }
  }, 120_000);
});

describe('controller with a black-holed API server connection', () => {
  it('fails /healthz while its store answers nothing, and recovers once the network heals', async () => {
    const proxy = await startStallProxy(cp.kubeConfig);
    const client = await KubeClient.create(proxy.kubeConfig, () => {}, { requestTimeoutMs: 1000 });
    const quiet = createLogger('controller', {
      level: 'error',
      destination: new Writable({ write: (_c, _e, cb) => cb() }),
    });
    const controller = await startController({
      settings: { listen: { host: '127.0.0.1', port: 0 }, maxBodyBytes: 64 * 1024, agentTimeoutMs: 5000 },
      store: KubeControllerStore.over(client, 'default'),
      storeStallMs: 3000,
      logger: quiet,
    });
    const probe = async (path: string): Promise<{ status: number; text: string }> => {
      const res = await fetch(`http://127.0.0.1:${controller.port}${path}`);
      return { status: res.status, text: await res.text() };
    };
    // An API request whose account token the controller looks up in its store (a 401 once answered).
    const { token } = newSecretToken('svca');
    const apiCall = async (): Promise<number> => {
      const res = await fetch(`http://127.0.0.1:${controller.port}/api/v1/environment/disable`, {
        method: 'POST',
        headers: { 'content-type': 'application/svc.v1+json', 'x-token': token },
        body: '{}',
      });
      await res.arrayBuffer();
      return res.status;
    };
    try {
      expect(await apiCall()).toBe(401);
      expect(await probe('/healthz')).toEqual({ status: 200, text: 'ok\n' });

      const stalledAt = Date.now();
      proxy.stall();
      // Requests keep asking the store (they fail at the client's deadline instead of hanging).
      const wedged = await eventually(
        async () => {
          expect(await apiCall()).toBeGreaterThanOrEqual(500);
          const h = await probe('/healthz');
          return h.status === 503 ? h : undefined;
        },
        'controller /healthz failing',
        30_000,
      );
      const detectedMs = Date.now() - stalledAt;
      expect(wedged.text).toMatch(/^wedged: the store answered none of \d+ calls for \d+ s \(\d+ still waiting\)\n$/);

      proxy.pass();
      await eventually(
        async () => {
          await apiCall();
          return (await probe('/healthz')).status === 200;
        },
        'controller /healthz ok again',
        30_000,
      );
      figures.fault({
        fault: 'Controller (Kubernetes store) API server connection black-holed, then healed',
        injections: 1,
        outcome: `/healthz failed ${(detectedMs / 1000).toFixed(1)} s after the stall (store stall limit 3 s, calls bounded by a 1 s deadline) and recovered once the network healed`,
        lost: 0,
      });
    } finally {
      await controller.close();
      client.close();
      await proxy.close();
    }
  }, 90_000);
});
