import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveToken } from '../../lib/token.ts';
import type { ControlPlane } from './envtest.ts';
import {
  api,
  condition,
  container,
  createAccess,
  createShare,
  eventually,
  getOrNone,
  markAvailable,
  mergePatch,
  paths,
  readyShare,
  startCluster,
  startTestOperator,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';

let cp: ControlPlane;
let operator: TestOperator;

beforeAll(async () => {
  cp = await startCluster({ controllerManager: true });
  operator = await startTestOperator(cp);
}, 180_000);

afterAll(async () => {
  await operator?.close();
  await cp?.stop();
});

async function accessWithReady(name: string, status: 'True' | 'False', reason?: string): Promise<Obj> {
  return await eventually(
    async () => {
      if (status === 'True') await markAvailable(cp, `svc-access-${name}`);
      const a = await getOrNone(cp, paths.access(name));
      const c = condition(a, 'Ready');
      return c?.status === status && (reason === undefined || c.reason === reason) ? a : undefined;
    },
    `Access ${name} Ready=${status}${reason ? ` (${reason})` : ''}`,
  );
}

describe('operator: Access on a real API server', () => {
  it('reconciles an Access into a Deployment and Service forwarding to the private share', async () => {
    await createShare(cp, 'db', {
      shareMode: 'private',
      backendMode: 'proxy',
      target: 'http://postgres.default.svc:5432',
      token: 'dbtoken',
    });
    const share = await readyShare(cp, 'db', 1);
    expect(share.status?.frontendEndpoints ?? []).toEqual([]);
    expect(await getOrNone(cp, paths.ingress('svc-share-db'))).toBeUndefined();

    const created = await createAccess(cp, 'db-access', { shareToken: 'dbtoken', bindPort: 15432 });
    const access = await accessWithReady('db-access', 'True');
    expect(access.status).toMatchObject({
      frontendToken: deriveToken(created.metadata.uid ?? ''),
      endpoint: 'http://svc-access-db-access.default.svc:15432',
      observedGeneration: 1,
    });

    const deployment = await api(cp, paths.deployment('svc-access-db-access'));
    expect(deployment.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Access', name: 'db-access', controller: true }),
    ]);
    expect(container(deployment, 'agent')?.args).toEqual([
      'agent',
      'backend',
      '--backend-mode',
      'proxy',
      '--target',
      'http://svc-share-db.default.svc:80',
      '--listen',
      '0.0.0.0:15432',
      '--identity-headers',
      'strip',
    ]);
    const service = await api(cp, paths.service('svc-access-db-access'));
    expect(service.spec).toMatchObject({
      selector: { 'svc.dev/access': 'db-access' },
      ports: [expect.objectContaining({ port: 15432, targetPort: 15432 })],
    });
  });

  it('reacts to a bindPort change', async () => {
    await mergePatch(cp, paths.access('db-access'), { spec: { bindPort: 25432 } });
    const access = await eventually(async () => {
      const a = await getOrNone(cp, paths.access('db-access'));
      return a?.status?.observedGeneration === 2 ? a : undefined;
    }, 'generation 2 observed');
    expect(access.status?.endpoint).toBe('http://svc-access-db-access.default.svc:25432');
    expect(container(await api(cp, paths.deployment('svc-access-db-access')), 'agent')?.args).toContain(
      '0.0.0.0:25432',
    );
  });

  it('reports a missing share, then becomes Ready when the share appears', async () => {
    await createAccess(cp, 'early', { shareToken: 'later-share' });
    const waiting = await accessWithReady('early', 'False', 'ShareNotFound');
    expect(condition(waiting, 'Ready')?.message).toContain('no Share with token later-share');
    expect(await getOrNone(cp, paths.deployment('svc-access-early'))).toBeUndefined();

    await createShare(cp, 'later', {
      shareMode: 'private',
      backendMode: 'proxy',
      target: 'http://x.default.svc',
      token: 'later-share',
    });
    const ready = await accessWithReady('early', 'True');
    expect(ready.status?.endpoint).toBe('http://svc-access-early.default.svc:8080');
  });

  it('refuses to reach a public share', async () => {
    await createShare(cp, 'open', { backendMode: 'proxy', target: 'http://x.default.svc', token: 'open-share' });
    await readyShare(cp, 'open', 1);
    await createAccess(cp, 'to-public', { shareToken: 'open-share' });
    const a = await accessWithReady('to-public', 'False', 'ShareNotPrivate');
    expect(condition(a, 'Ready')?.message).toContain('public');
    expect(await getOrNone(cp, paths.deployment('svc-access-to-public'))).toBeUndefined();
  });

  it('removes the children when the Access is deleted', async () => {
    await api(cp, paths.access('db-access'), { method: 'DELETE' });
    await eventually(
      async () => {
        const left = await Promise.all([
          getOrNone(cp, paths.deployment('svc-access-db-access')),
          getOrNone(cp, paths.service('svc-access-db-access')),
        ]);
        return left.every((x) => x === undefined);
      },
      'Access children garbage-collected',
      60_000,
    );
    expect(await operator.metrics.total('reconciles', { kind: 'Access', result: 'error' })).toBe(0);
  }, 90_000);
});
