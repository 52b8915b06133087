/**
 * `Ready` means the share answers: on a real API server, a Share or Access whose Deployment has no
 * available replica is Ready=False, a pod that cannot pull its image (or crashes) says so in the
 * reason and message, and Ready turns True once the Deployment reports availability — and, when
 * the operator is told the ingress controller writes addresses, once the Ingress has one.
 *
 * No kubelet or Deployment controller runs here: the test writes what they would (a pod with a
 * waiting container, the Deployment's status subresource), which is what the API server serves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './envtest.ts';
import {
  DOMAIN,
  IMAGE,
  NS,
  api,
  condition,
  createAccess,
  createShare,
  eventually,
  getOrNone,
  markAvailable,
  paths,
  startCluster,
  startTestOperator,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';

let cp: ControlPlane;

beforeAll(async () => {
  cp = await startCluster();
}, 180_000);

afterAll(async () => {
  await cp?.stop();
});

async function withReady(path: string, reason: string): Promise<Obj> {
  return await eventually(async () => {
    const obj = await getOrNone(cp, path);
    return condition(obj, 'Ready')?.reason === reason ? obj : undefined;
  }, `${path} Ready reason ${reason}`);
}

/** A pod of the given owner label, its container waiting for `reason`: what a kubelet would report. */
async function waitingPod(
  name: string,
  labels: Record<string, string>,
  container: string,
  waiting: { reason: string; message: string },
  lastExit?: number,
): Promise<void> {
  await api(cp, `/api/v1/namespaces/${NS}/pods`, {
    method: 'POST',
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NS, labels },
      spec: { containers: [{ name: container, image: IMAGE }] },
    },
  });
  await api(cp, `/api/v1/namespaces/${NS}/pods/${name}/status`, {
    method: 'PATCH',
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            name: container,
            image: IMAGE,
            imageID: '',
            ready: false,
            restartCount: lastExit === undefined ? 0 : 3,
            state: { waiting },
            ...(lastExit === undefined
              ? {}
              : {
                  lastState: {
                    terminated: {
                      exitCode: lastExit,
                      reason: 'Error',
                      startedAt: '2026-01-01T00:00:00Z',
                      finishedAt: '2026-01-01T00:00:01Z',
                    },
                  },
                }),
          },
        ],
      },
    },
  });
}

async function eventsOf(name: string): Promise<{ reason: string; type: string; message: string }[]> {
  const list = (await api(cp, `${paths.events()}?fieldSelector=involvedObject.name=${name}`)) as unknown as {
    items: { reason: string; type: string; message: string }[];
  };
  return list.items;
}

/** The object's Events once one of `type` and `reason` is among them: an Event follows the status write. */
async function eventsWith(name: string, type: string, reason: string) {
  return await eventually(async () => {
    const events = await eventsOf(name);
    return events.some((e) => e.type === type && e.reason === reason) ? events : undefined;
  }, `a ${type} ${reason} Event for ${name}`);
}

describe('operator: Ready means the share answers', () => {
  let op: TestOperator;
  beforeAll(async () => {
    op = await startTestOperator(cp);
  });
  afterAll(async () => {
    await op?.close();
  });

  it('a Share is not Ready until its Deployment is available; an image pull failure is the reason', async () => {
    await createShare(cp, 'pull', { backendMode: 'proxy', target: 'http://app.default.svc' });
    const pending = await withReady(paths.share('pull'), 'DeploymentUnavailable');
    expect(condition(pending, 'Ready')).toMatchObject({ status: 'False', observedGeneration: 1 });
    expect(condition(pending, 'Ready')?.message).toContain('svc-share-pull has no available replica');
    // Accepted: the token and URL are in status while the pod starts.
    expect(pending.status?.token).toMatch(/^[a-z2-7]+$/);
    expect(pending.status?.frontendEndpoints).toEqual([`http://${String(pending.status?.token)}.${DOMAIN}:8443`]);

    const image = 'registry.example.com/private/svc:1';
    await waitingPod('svc-share-pull-abc12', { 'svc.dev/share': 'pull' }, 'agent', {
      reason: 'ImagePullBackOff',
      message: `Back-off pulling image "${image}"`,
    });
    const failing = await withReady(paths.share('pull'), 'ImagePullFailed');
    expect(condition(failing, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(failing, 'Ready')?.message).toBe(
      `pod svc-share-pull-abc12 container agent: ImagePullBackOff: Back-off pulling image "${image}"`,
    );
    expect(await eventsWith('pull', 'Warning', 'ImagePullFailed')).toContainEqual(
      expect.objectContaining({ type: 'Warning', reason: 'ImagePullFailed' }),
    );

    // The image is pulled and the pod runs: the Deployment reports it available.
    await api(cp, `/api/v1/namespaces/${NS}/pods/svc-share-pull-abc12`, { method: 'DELETE' });
    await markAvailable(cp, 'svc-share-pull');
    const ready = await withReady(paths.share('pull'), 'Available');
    expect(condition(ready, 'Ready')).toMatchObject({ status: 'True', message: 'Deployment svc-share-pull available' });
    expect(condition(ready, 'Available')).toMatchObject({ status: 'True', reason: 'MinimumReplicasAvailable' });
    expect(await eventsWith('pull', 'Normal', 'Ready')).toContainEqual(
      expect.objectContaining({ type: 'Normal', reason: 'Ready' }),
    );
  });

  it('a Deployment that cannot create its pod (quota, admission) is the reason', async () => {
    await createShare(cp, 'quota', { backendMode: 'proxy', target: 'http://app.default.svc' });
    await withReady(paths.share('quota'), 'DeploymentUnavailable');
    await api(cp, `${paths.deployment('svc-share-quota')}/status`, {
      method: 'PATCH',
      contentType: 'application/merge-patch+json',
      body: {
        status: {
          observedGeneration: 1,
          conditions: [
            {
              type: 'ReplicaFailure',
              status: 'True',
              reason: 'FailedCreate',
              message: 'pods "svc-share-quota-x" is forbidden: exceeded quota: pods',
            },
          ],
        },
      },
    });
    const failing = await eventually(async () => {
      const s = await getOrNone(cp, paths.share('quota'));
      return condition(s, 'Ready')?.message.includes('exceeded quota') ? s : undefined;
    }, 'the quota failure in Ready');
    expect(condition(failing, 'Ready')).toMatchObject({ status: 'False', reason: 'DeploymentUnavailable' });
    expect(condition(failing, 'Ready')?.message).toBe(
      'Deployment svc-share-quota cannot create its pod: pods "svc-share-quota-x" is forbidden: exceeded quota: pods',
    );
  });

  it('an Access gets the same: a crashing pod is the reason, then Ready once available', async () => {
    await createShare(cp, 'db', {
      shareMode: 'private',
      backendMode: 'proxy',
      target: 'http://postgres.default.svc:5432',
      token: 'dbready',
    });
    await withReady(paths.share('db'), 'DeploymentUnavailable');
    await createAccess(cp, 'db-in', { shareToken: 'dbready', bindPort: 15432 });
    const pending = await withReady(paths.access('db-in'), 'DeploymentUnavailable');
    expect(pending.status?.endpoint).toBe(`http://svc-access-db-in.${NS}.svc:15432`);

    await waitingPod(
      'svc-access-db-in-xyz34',
      { 'svc.dev/access': 'db-in' },
      'access',
      { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container=access' },
      1,
    );
    const crashing = await withReady(paths.access('db-in'), 'ContainerCrashing');
    expect(condition(crashing, 'Ready')?.message).toBe(
      'pod svc-access-db-in-xyz34 container access: CrashLoopBackOff (last exit 1 Error): back-off 40s restarting failed container=access',
    );

    await markAvailable(cp, 'svc-access-db-in');
    const ready = await withReady(paths.access('db-in'), 'Available');
    expect(condition(ready, 'Ready')?.status).toBe('True');
  });
});

describe('operator: an Ingress whose controller reports addresses', () => {
  it('with --ingress-await-address a Share is Ready only once its Ingress has an address', async () => {
    const op = await startTestOperator(cp, { ingress: { annotations: {}, awaitAddress: true } });
    try {
      await createShare(cp, 'lb', { backendMode: 'proxy', target: 'http://app.default.svc' });
      await eventually(async () => getOrNone(cp, paths.deployment('svc-share-lb')), 'the Deployment');
      await markAvailable(cp, 'svc-share-lb');
      const waiting = await withReady(paths.share('lb'), 'IngressPending');
      expect(condition(waiting, 'Ready')?.message).toBe(
        'Ingress svc-share-lb has no load-balancer address yet (its ingress controller has not admitted it)',
      );

      await api(cp, `${paths.ingress('svc-share-lb')}/status`, {
        method: 'PATCH',
        contentType: 'application/merge-patch+json',
        body: { status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } },
      });
      const ready = await withReady(paths.share('lb'), 'Available');
      expect(condition(ready, 'Ready')).toMatchObject({
        status: 'True',
        message: 'Deployment svc-share-lb available; Ingress admitted',
      });
    } finally {
      await op.close();
    }
  });
});
