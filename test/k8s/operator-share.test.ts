import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveToken } from '../../lib/token.ts';
import {
  AUTH_SHARDS,
  AUTH_SHARE_DIRECTORY,
  SHARD_KEY,
  shardKey,
  shardOf,
  shardSecretName,
} from '../../operator/auth-shards.ts';
import { AUTH_SECRET, authShardSecrets } from './auth-config-files.ts';
import type { ControlPlane } from './envtest.ts';
import {
  DOMAIN,
  IMAGE,
  NS,
  RELEASE_NS,
  SECRET_VALUES,
  api,
  condition,
  container,
  createShare,
  decodeSecret,
  eventually,
  getOrNone,
  mergePatch,
  paths,
  readyShare,
  sleep,
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

function expectOwned(child: Obj | undefined, shareName: string): void {
  expect(child?.metadata.labels).toMatchObject({
    'app.kubernetes.io/managed-by': 'svc-operator',
    'svc.dev/share': shareName,
  });
  expect(child?.metadata.ownerReferences).toEqual([
    expect.objectContaining({ kind: 'Share', name: shareName, controller: true }),
  ]);
  expect(child?.metadata.managedFields?.map((m) => m.manager)).toContain('svc-operator');
}

describe('operator: Share on a real API server', () => {
  it('reconciles a public proxy share into Deployment, Service and Ingress and reports status', async () => {
    const created = await createShare(cp, 'web-app', { backendMode: 'proxy', target: 'http://app.default.svc:8080' });
    const token = deriveToken(created.metadata.uid ?? '');
    const share = await readyShare(cp, 'web-app', 1);
    expect(share.status).toMatchObject({
      token,
      frontendEndpoints: [`http://${token}.${DOMAIN}:8443`],
      observedGeneration: 1,
    });
    expect(condition(share, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Available',
      observedGeneration: 1,
    });

    const deployment = await api(cp, paths.deployment('svc-share-web-app'));
    expectOwned(deployment, 'web-app');
    expect(container(deployment, 'agent')?.args).toEqual([
      'agent',
      'backend',
      '--backend-mode',
      'proxy',
      '--target',
      'http://app.default.svc:8080',
      '--listen',
      '0.0.0.0:9000',
      '--identity-headers',
      'strip',
    ]);
    expect(container(deployment, 'frontend')).toBeUndefined();
    const pod = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect((pod.containers as { image: string; securityContext: Record<string, unknown> }[])[0]).toMatchObject({
      image: IMAGE,
      securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true },
    });

    const service = await api(cp, paths.service('svc-share-web-app'));
    expectOwned(service, 'web-app');
    expect(service.spec).toMatchObject({
      selector: { 'svc.dev/share': 'web-app' },
      ports: [expect.objectContaining({ port: 80, targetPort: 9000 })],
    });

    const ingress = await api(cp, paths.ingress('svc-share-web-app'));
    expectOwned(ingress, 'web-app');
    expect(ingress.spec).toMatchObject({
      rules: [
        {
          host: `${token}.${DOMAIN}`,
          http: { paths: [{ path: '/', backend: { service: { name: 'svc-share-web-app', port: { number: 80 } } } }] },
        },
      ],
    });
    expect(await getOrNone(cp, paths.secret('svc-share-web-app-frontend'))).toBeUndefined();

    // The Event follows the status write.
    const events = await eventually(async () => {
      const list = (await api(cp, `${paths.events()}?fieldSelector=involvedObject.name=web-app`)) as unknown as {
        items: { reason: string; type: string }[];
      };
      return list.items.some((e) => e.reason === 'Ready') ? list : undefined;
    }, 'the Ready Event of web-app');
    expect(events.items).toContainEqual(expect.objectContaining({ reason: 'Ready', type: 'Normal' }));
  });

  it('runs the OAuth sidecar for an OAuth share, configured from the installation Secret, and lists it for the auth endpoint', async () => {
    await createShare(cp, 'secure', {
      backendMode: 'proxy',
      target: 'http://internal.default.svc',
      token: 'secure-docs',
      oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'], checkInterval: '30m' },
    });
    const share = await readyShare(cp, 'secure', 1);
    expect(share.status).toMatchObject({
      token: 'secure-docs',
      frontendEndpoints: [`http://secure-docs.${DOMAIN}:8443`],
    });

    const deployment = await api(cp, paths.deployment('svc-share-secure'));
    // A proxy share behind OAuth: the sidecar alone, proxying to the target itself.
    expect(container(deployment, 'agent')).toBeUndefined();
    expect(container(deployment, 'frontend')?.args).toEqual(['frontend', '--config', '/etc/svc/frontend/config.yaml']);
    expect(container(deployment, 'frontend')?.volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'frontend-config', mountPath: '/etc/svc/frontend' }),
    );
    const service = await api(cp, paths.service('svc-share-secure'));
    expect(service.spec).toMatchObject({ ports: [expect.objectContaining({ port: 80, targetPort: 8080 })] });

    const secret = await api(cp, paths.secret('svc-share-secure-frontend'));
    expectOwned(secret, 'secure');
    const config = parseYaml(decodeSecret(secret, 'config.yaml')) as Record<string, unknown>;
    expect(config.metrics_address).toBe('0.0.0.0:9090');
    // The share's own section: none of the installation's secrets (docs/kubernetes.md, "What a tenant namespace holds").
    expect(config.oauth).toMatchObject({
      bind_address: '0.0.0.0:8080',
      endpoint_url: 'http://auth.share.test:8443',
      auth_service: { url: `http://svc-auth-internal.${RELEASE_NS}.svc:8081` },
    });
    for (const value of Object.values(SECRET_VALUES)) expect(JSON.stringify(config)).not.toContain(value);
    expect(config.shares).toEqual([
      {
        token: 'secure-docs',
        instance: share.metadata.uid,
        target: 'http://internal.default.svc',
        oauth_provider: 'dev',
        oauth_email_address_patterns: ['*@example.com'],
        oauth_check_interval: '30m',
      },
    ]);

    // The auth endpoint's config: the oauth section, and the share in the shard its namespace/name picks.
    const shardName = shardSecretName(AUTH_SECRET, shardOf('default', 'secure', shardKey(SECRET_VALUES.signingKey)));
    const shard = await eventually(async () => {
      const s = await getOrNone(cp, paths.secret(shardName, RELEASE_NS));
      const entries = s ? (parseYaml(decodeSecret(s, SHARD_KEY)) as { token: string }[]) : [];
      return entries.some((x) => x.token === 'secure-docs') ? s : undefined;
    }, 'auth endpoint shard listing the OAuth share');
    expect(shard.type).toBe('Opaque');
    expect(shard.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'svc-operator' });
    expect(parseYaml(decodeSecret(shard, SHARD_KEY))).toContainEqual(
      expect.objectContaining({
        token: 'secure-docs',
        target: 'http://svc-share-secure.default.svc:80',
        oauth_provider: 'dev',
      }),
    );
    const shards = await authShardSecrets(cp);
    expect(shards.size).toBe(AUTH_SHARDS);
    const auth = parseYaml(decodeSecret(await api(cp, paths.secret(AUTH_SECRET, RELEASE_NS)), 'config.yaml')) as Record<
      string,
      unknown
    >;
    expect(auth).toMatchObject({ shares: [], share_directory: AUTH_SHARE_DIRECTORY });

    // Secrets reach Secrets only: never status, Events or logs.
    const events = JSON.stringify(await api(cp, paths.events()));
    for (const value of Object.values(SECRET_VALUES)) {
      expect(JSON.stringify(share.status)).not.toContain(value);
      expect(events).not.toContain(value);
      expect(operator.logs()).not.toContain(value);
    }
  });

  it('reacts to spec changes: new target, OAuth removed, share made private', async () => {
    await createShare(cp, 'changing', {
      backendMode: 'proxy',
      target: 'http://one.default.svc',
      oauth: { provider: 'dev' },
    });
    await readyShare(cp, 'changing', 1);
    expect(await getOrNone(cp, paths.secret('svc-share-changing-frontend'))).toBeDefined();

    await mergePatch(cp, paths.share('changing'), { spec: { target: 'http://two.default.svc:81' } });
    await readyShare(cp, 'changing', 2);
    const sidecarTargets = async (): Promise<string[] | undefined> => {
      const secret = await getOrNone(cp, paths.secret('svc-share-changing-frontend'));
      if (!secret) return undefined;
      return (parseYaml(decodeSecret(secret, 'config.yaml')) as { shares: { target: string }[] }).shares.map(
        (x) => x.target,
      );
    };
    expect(await sidecarTargets()).toEqual(['http://two.default.svc:81']);

    await mergePatch(cp, paths.share('changing'), { spec: { oauth: null } });
    await readyShare(cp, 'changing', 3);
    const deployment = await api(cp, paths.deployment('svc-share-changing'));
    expect(container(deployment, 'frontend')).toBeUndefined();
    expect(container(deployment, 'agent')?.args).toEqual(expect.arrayContaining(['0.0.0.0:9000', 'strip']));
    await eventually(
      async () => (await getOrNone(cp, paths.secret('svc-share-changing-frontend'))) === undefined,
      'sidecar Secret removed',
    );

    await mergePatch(cp, paths.share('changing'), { spec: { shareMode: 'private' } });
    const priv = await readyShare(cp, 'changing', 4);
    expect(priv.status?.frontendEndpoints ?? []).toEqual([]);
    await eventually(
      async () => (await getOrNone(cp, paths.ingress('svc-share-changing'))) === undefined,
      'Ingress of the now private share removed',
    );
  });

  it('repairs drift: a deleted or edited child is restored', async () => {
    await createShare(cp, 'drift', { backendMode: 'proxy', target: 'http://drift.default.svc' });
    await readyShare(cp, 'drift', 1);
    await api(cp, paths.service('svc-share-drift'), { method: 'DELETE' });
    await eventually(
      async () => (await getOrNone(cp, paths.service('svc-share-drift')))?.metadata.uid !== undefined,
      'Service recreated',
    );
    await mergePatch(cp, paths.deployment('svc-share-drift'), { spec: { replicas: 5 } });
    await eventually(
      async () => ((await api(cp, paths.deployment('svc-share-drift'))).spec as { replicas: number }).replicas === 1,
      'replicas restored',
    );
    // The restored Deployment has a new generation: Ready again once it reports it available.
    await readyShare(cp, 'drift', 1);
  });

  it('reports a spec the schema cannot catch as Ready=False without retrying', async () => {
    const before = await operator.metrics.total('reconciles', { kind: 'Share' });
    await createShare(cp, 'bad-provider', {
      backendMode: 'proxy',
      target: 'http://x.default.svc',
      oauth: { provider: 'nope' },
    });
    const share = await eventually(async () => {
      const s = await getOrNone(cp, paths.share('bad-provider'));
      return condition(s, 'Ready')?.status === 'False' ? s : undefined;
    }, 'Ready=False');
    expect(condition(share, 'Ready')).toMatchObject({ reason: 'InvalidSpec', observedGeneration: 1 });
    expect(condition(share, 'Ready')?.message).toContain(
      'spec.oauth.provider: unknown provider "nope" (configured: dev)',
    );
    expect(await getOrNone(cp, paths.deployment('svc-share-bad-provider'))).toBeUndefined();

    await sleep(5000);
    const invalid = await operator.metrics.total('reconciles', { kind: 'Share', result: 'invalid' });
    const errors = await operator.metrics.total('reconciles', { kind: 'Share', result: 'error' });
    const after = await operator.metrics.total('reconciles', { kind: 'Share' });
    expect(invalid).toBeLessThanOrEqual(2);
    expect(errors).toBe(0);
    expect(after - before).toBeLessThanOrEqual(3);
    const events = (await api(cp, `${paths.events()}?fieldSelector=involvedObject.name=bad-provider`)) as unknown as {
      items: { reason: string; type: string }[];
    };
    expect(events.items.filter((e) => e.reason === 'InvalidSpec' && e.type === 'Warning')).toHaveLength(1);

    // Fixing the spec makes it Ready.
    await mergePatch(cp, paths.share('bad-provider'), { spec: { oauth: { provider: 'dev' } } });
    await readyShare(cp, 'bad-provider', 2);
  });

  it('removes the children when the Share is deleted (garbage collection through ownerReferences)', async () => {
    await createShare(cp, 'short-lived', {
      backendMode: 'proxy',
      target: 'http://x.default.svc',
      oauth: { provider: 'dev' },
    });
    await readyShare(cp, 'short-lived', 1);
    await api(cp, paths.share('short-lived'), { method: 'DELETE' });
    await eventually(
      async () => {
        const left = await Promise.all([
          getOrNone(cp, paths.deployment('svc-share-short-lived')),
          getOrNone(cp, paths.service('svc-share-short-lived')),
          getOrNone(cp, paths.ingress('svc-share-short-lived')),
          getOrNone(cp, paths.secret('svc-share-short-lived-frontend')),
        ]);
        return left.every((x) => x === undefined);
      },
      'children garbage-collected',
      60_000,
    );
    expect(NS).toBe('default');
  }, 90_000);
});
