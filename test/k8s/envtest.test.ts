import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from './envtest.ts';

describe('envtest harness (real etcd + kube-apiserver)', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('creates and reads a ConfigMap as the admin user', async () => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'smoke' }, data: { greeting: 'hello' } },
    });
    const read = await core.readNamespacedConfigMap({ namespace: 'default', name: 'smoke' });
    expect(read.data).toEqual({ greeting: 'hello' });
  });

  it('enforces RBAC for a user without bindings', async () => {
    const { kubeConfig } = await cp.userKubeConfig('nobody');
    const core = kubeConfig.makeApiClient(CoreV1Api);
    await expect(core.listNamespacedConfigMap({ namespace: 'default' })).rejects.toMatchObject({ code: 403 });
  });

  it('keeps data across an API server restart', async () => {
    await cp.restartApiServer();
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const read = await core.readNamespacedConfigMap({ namespace: 'default', name: 'smoke' });
    expect(read.data?.greeting).toBe('hello');
  });
});

describe('envtest harness with kube-controller-manager', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: true });
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('garbage-collects a child whose owner was deleted', async () => {
    const core = cp.kubeConfig.makeApiClient(CoreV1Api);
    const parent = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'parent' } },
    });
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: {
        metadata: {
          name: 'child',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'parent', uid: parent.metadata!.uid!, controller: true },
          ],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace: 'default', name: 'parent' });
    await expect
      .poll(
        async () => {
          const list = await core.listNamespacedConfigMap({ namespace: 'default' });
          return list.items.map((cm) => cm.metadata?.name).filter((n) => n === 'child');
        },
        { timeout: 25_000, interval: 250 },
      )
      .toEqual([]);
  });
});
