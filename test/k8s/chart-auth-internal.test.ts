/**
 * The auth endpoint's internal port, rendered with the real helm binary: share pods reach it through
 * its own ClusterIP Service (the operator writes `http://<release>-auth-internal.<namespace>.svc:8081`
 * into their config), and neither the visitor-facing auth Service nor its Ingress routes to it.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { AUTH_SHARDS, AUTH_SHARE_DIRECTORY, SHARD_KEY, shardSecretName } from '../../operator/auth-shards.ts';
import { authServiceUrl } from '../../operator/frontend-secret.ts';
import { locateHelm } from './binaries.ts';
import { CHART_OAUTH, RELEASE, RELEASE_NS, findObject, helmRunner, type Obj } from './helm-runner.ts';

let work: string;
let objs: Obj[];

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-chart-auth-'));
  const values = join(work, 'oauth-values.yaml');
  await writeFile(values, toYaml({ frontend: { oauth: CHART_OAUTH } }));
  objs = await helmRunner(locateHelm(), work).template(
    '-f',
    values,
    '--set',
    'shareDomain=share.example.com,auth.ingress.enabled=true',
  );
});
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

type Service = Obj & { spec: { type?: string; ports: { name: string; port: number; targetPort: string }[] } };

describe('the auth endpoint’s internal port', () => {
  it('has its own ClusterIP Service at the URL the operator gives share pods', () => {
    const internal = findObject(objs, 'Service', `${RELEASE}-auth-internal`) as Service;
    expect(internal.spec.type).toBe('ClusterIP');
    expect(internal.spec.ports).toEqual([{ name: 'internal', port: 8081, targetPort: 'internal', protocol: 'TCP' }]);
    expect(authServiceUrl({ namespace: RELEASE_NS, name: `${RELEASE}-frontend` })).toBe(
      `http://${RELEASE}-auth-internal.${RELEASE_NS}.svc:8081`,
    );
    const deployment = findObject(objs, 'Deployment', `${RELEASE}-auth`) as Obj & {
      spec: {
        template: { spec: { containers: { name: string; ports: { name: string; containerPort: number }[] }[] } };
      };
    };
    expect(deployment.spec.template.spec.containers[0]?.ports).toContainEqual(
      expect.objectContaining({ name: 'internal', containerPort: 8081 }),
    );
  });

  it('is on neither the visitor-facing auth Service nor its Ingress', () => {
    const auth = findObject(objs, 'Service', `${RELEASE}-auth`) as Service;
    expect(auth.spec.ports.map((p) => p.port)).not.toContain(8081);
    const ingress = JSON.stringify(findObject(objs, 'Ingress', `${RELEASE}-auth`));
    expect(ingress).not.toContain('internal');
    expect(ingress).not.toContain('8081');
  });
});

type PodSpec = {
  containers: { name: string; args: string[]; volumeMounts: { name: string; mountPath: string }[] }[];
  volumes: {
    name: string;
    secret?: { secretName: string };
    projected?: { sources: { secret: { name: string; optional?: boolean; items: unknown[] } }[] };
  }[];
};

describe('the auth endpoint’s shares', () => {
  const pod = () =>
    (findObject(objs, 'Deployment', `${RELEASE}-auth`) as Obj & { spec: { template: { spec: PodSpec } } }).spec.template
      .spec;

  it('mount the 16 shard Secrets the operator writes, each optional, where the config’s share_directory points', () => {
    const { containers, volumes } = pod();
    const frontend = containers[0];
    const configFile = frontend?.args[frontend.args.indexOf('--config') + 1] ?? '';
    const mountOf = (volume: string) => frontend?.volumeMounts.find((m) => m.name === volume)?.mountPath;
    expect(volumes.find((v) => v.name === 'config')?.secret?.secretName).toBe(`${RELEASE}-auth-frontend`);
    expect(dirname(configFile)).toBe(mountOf('config'));
    expect(resolve(dirname(configFile), AUTH_SHARE_DIRECTORY)).toBe(mountOf('shares'));
    const sources = volumes.find((v) => v.name === 'shares')?.projected?.sources ?? [];
    expect(sources).toEqual(
      Array.from({ length: AUTH_SHARDS }, (_, i) => ({
        secret: {
          name: shardSecretName(`${RELEASE}-auth-frontend`, i),
          optional: true,
          items: [{ key: SHARD_KEY, path: `shares-${String(i).padStart(2, '0')}.yaml` }],
        },
      })),
    );
  });
});
