import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyCrds, readManifests } from './crds.ts';
import { DEFAULT_CHECK_INTERVAL, SHARE_TOKEN } from '../../lib/share/spec.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { rawRequest } from './raw.ts';

const CRD_DIR = join(import.meta.dirname, '..', '..', 'crds');
const CRD_FILES = readdirSync(CRD_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => join(CRD_DIR, f));
const API_VERSION = 'svc.dev/v1alpha1';
const NS = 'default';

interface Schema {
  properties?: Record<string, Schema>;
  pattern?: string;
  default?: unknown;
}
type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

let cp: ControlPlane;
let objects: KubernetesObjectApi;
let custom: CustomObjectsApi;
let seq = 0;

function share(spec: Record<string, unknown>): Obj {
  return { apiVersion: API_VERSION, kind: 'Share', metadata: { name: `share-${++seq}`, namespace: NS }, spec };
}

/** The API server's rejection message for creating `obj` (fails the test when it is accepted). */
async function rejection(obj: Obj, update?: (created: Obj) => Obj): Promise<string> {
  try {
    const created = await objects.create(obj);
    if (!update) throw new Error(`accepted: ${JSON.stringify(obj.spec)}`);
    await objects.replace(update(created));
  } catch (err) {
    const e = err as { code?: number; body?: unknown; message: string };
    if (e.code === undefined) throw err;
    expect(e.code).toBe(422);
    const body = typeof e.body === 'string' ? (JSON.parse(e.body) as { message?: string }) : undefined;
    return body?.message ?? e.message;
  }
  throw new Error(`update accepted: ${JSON.stringify(obj.spec)}`);
}

beforeAll(async () => {
  cp = await startControlPlane({ crds: CRD_FILES });
  objects = cp.kubeConfig.makeApiClient(KubernetesObjectApi);
  custom = cp.kubeConfig.makeApiClient(CustomObjectsApi);
});
afterAll(async () => {
  await cp?.stop();
});

describe('CRDs on a real API server', () => {
  it('apply and become Established (again: applying is idempotent)', async () => {
    const names = await applyCrds(cp.kubeConfig, CRD_FILES);
    expect(names.sort()).toEqual(['accesses.svc.dev', 'agentenrollments.svc.dev', 'shares.svc.dev']);
    const ext = cp.kubeConfig.makeApiClient(ApiextensionsV1Api);
    for (const name of names) {
      const crd = await ext.readCustomResourceDefinition({ name });
      const established = crd.status?.conditions?.find((c) => c.type === 'Established');
      expect(established?.status, name).toBe('True');
    }
  });

  it('describe every schema field (kubectl explain)', async () => {
    const undocumented: string[] = [];
    const walk = (schema: Record<string, unknown>, path: string): void => {
      if (!path.endsWith('.metadata') && typeof schema.description !== 'string') undocumented.push(path || '.');
      const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      for (const [key, child] of Object.entries(props)) walk(child, `${path}.${key}`);
      if (schema.items) walk(schema.items as Record<string, unknown>, `${path}[]`);
    };
    for (const file of CRD_FILES) {
      for (const crd of (await readManifests(file)) as Array<Obj & { spec: { versions: unknown[] } }>) {
        for (const v of crd.spec.versions as Array<{ schema: { openAPIV3Schema: Record<string, unknown> } }>) {
          walk(v.schema.openAPIV3Schema, `${crd.metadata?.name}`);
        }
      }
    }
    expect(undocumented).toEqual([]);
  });

  it('agree with the frontend on the check-interval default and the token syntax', async () => {
    const [crd] = (await readManifests(join(CRD_DIR, 'svc.dev_shares.yaml'))) as Array<
      Obj & { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } }
    >;
    const spec = crd!.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
    expect(spec.properties!.oauth!.properties!.checkInterval!.default).toBe(DEFAULT_CHECK_INTERVAL);
    const crdToken = new RegExp(spec.properties!.token!.pattern!);
    for (const sample of ['a', 'abc-123', 'a'.repeat(63), 'a'.repeat(64), '-a', 'a-', 'A', 'a_b', 'a.b', '']) {
      expect(crdToken.test(sample), sample).toBe(SHARE_TOKEN.test(sample));
    }
  });

  it('use short names that clash with no other resource', async () => {
    const shortNames = new Map<string, string[]>();
    const add = (owner: string, names: string[] | undefined): void => {
      for (const n of names ?? []) shortNames.set(n, [...(shortNames.get(n) ?? []), owner]);
    };
    const core = (await rawRequest(cp.kubeConfig, '/api/v1')) as {
      resources: { name: string; shortNames?: string[] }[];
    };
    for (const r of core.resources) add(r.name, r.shortNames);
    const groups = (await rawRequest(cp.kubeConfig, '/apis', {
      accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    })) as {
      items: { metadata: { name: string }; versions: { resources: { resource: string; shortNames?: string[] }[] }[] }[];
    };
    for (const g of groups.items) {
      const seen = new Set<string>();
      for (const v of g.versions) {
        for (const r of v.resources) {
          if (seen.has(r.resource)) continue;
          seen.add(r.resource);
          add(`${r.resource}.${g.metadata.name}`, r.shortNames);
        }
      }
    }
    expect(shortNames.get('svcshare')).toEqual(['shares.svc.dev']);
    expect(shortNames.get('svcaccess')).toEqual(['accesses.svc.dev']);
    expect(shortNames.get('svcenroll')).toEqual(['agentenrollments.svc.dev']);
    // A short name shared by the same resource in two groups (events, events.events.k8s.io) is no clash.
    const clashes = [...shortNames].filter(([, owners]) => new Set(owners.map((o) => o.split('.')[0])).size > 1);
    expect(clashes).toEqual([]);
  });
});

describe('Share validation', () => {
  it('accepts a public OAuth proxy share and applies defaults', async () => {
    const created = await objects.create<Obj>(
      share({
        backendMode: 'proxy',
        target: 'http://my-app.default.svc:8080/base',
        oauth: { provider: 'google', emailAddressPatterns: ['*@example.com', 'alice@example.org', '*@my-company.com'] },
        token: 'myapp',
      }),
    );
    expect(created.spec).toMatchObject({ shareMode: 'public', oauth: { checkInterval: '3h' } });
  });

  it('accepts a private proxy share without token, and web shares from a ConfigMap or a PVC', async () => {
    await objects.create(share({ shareMode: 'private', backendMode: 'proxy', target: 'https://example.com' }));
    await objects.create(share({ backendMode: 'web', target: '/srv/share', webVolume: { configMap: 'site' } }));
    const web = await objects.create<Obj>(
      share({
        backendMode: 'web',
        target: '/srv/share/docs/.well-known',
        webVolume: { persistentVolumeClaim: 'files' },
      }),
    );
    expect(web.metadata?.uid).toBeTruthy();
  });

  const proxy = { backendMode: 'proxy', target: 'http://app:8080' };
  const cases: Array<[string, Record<string, unknown>, string | RegExp]> = [
    ['an unknown shareMode', { ...proxy, shareMode: 'secret' }, 'spec.shareMode: Unsupported value: "secret"'],
    ['an unknown backendMode', { ...proxy, backendMode: 'ftp' }, 'spec.backendMode: Unsupported value: "ftp"'],
    ['a missing target', { backendMode: 'proxy' }, 'spec.target: Required value'],
    [
      'a non-http proxy target',
      { ...proxy, target: 'ftp://files.example.com/' },
      'spec.target: Invalid value: "object": target must be an absolute http:// or https:// URL when backendMode is proxy',
    ],
    [
      'a relative proxy target',
      { ...proxy, target: 'app:8080/x' },
      'target must be an absolute http:// or https:// URL',
    ],
    [
      'a proxy target without host',
      { ...proxy, target: 'http:///x' },
      'target must be an absolute http:// or https:// URL',
    ],
    [
      'oauth on a private share',
      { ...proxy, shareMode: 'private', oauth: { provider: 'google' } },
      'spec.oauth: Forbidden: oauth is only allowed when shareMode is public',
    ],
    ['oauth without provider', { ...proxy, oauth: { checkInterval: '1h' } }, 'spec.oauth.provider: Required value'],
    [
      'a provider name unusable in a callback path',
      { ...proxy, oauth: { provider: 'my/idp' } },
      /spec\.oauth\.provider: Invalid value: "my\/idp": spec\.oauth\.provider in body should match/,
    ],
    [
      'an email glob without @',
      { ...proxy, oauth: { provider: 'google', emailAddressPatterns: ['example.com'] } },
      /spec\.oauth\.emailAddressPatterns\[0\]: Invalid value: "example.com": .* should match '\^\[\^@\\s\]\+@\[\^@\\s\]\+\$'/,
    ],
    [
      'an email glob with two @',
      { ...proxy, oauth: { provider: 'google', emailAddressPatterns: ['a@b@example.com'] } },
      'spec.oauth.emailAddressPatterns[0]: Invalid value: "a@b@example.com"',
    ],
    [
      'more email globs than a share may list',
      { ...proxy, oauth: { provider: 'google', emailAddressPatterns: Array<string>(65).fill('*@example.com') } },
      /spec\.oauth\.emailAddressPatterns: Too many: 65: must have at most 64 items/,
    ],
    [
      'an email glob longer than 320 characters',
      { ...proxy, oauth: { provider: 'google', emailAddressPatterns: [`${'a'.repeat(309)}@example.com`] } },
      /spec\.oauth\.emailAddressPatterns\[0\]: Too long: .*320/,
    ],
    [
      'a malformed duration',
      { ...proxy, oauth: { provider: 'google', checkInterval: '3 hours' } },
      /spec\.oauth\.checkInterval: Invalid value: "3 hours": .* should match/,
    ],
    [
      'a zero duration',
      { ...proxy, oauth: { provider: 'google', checkInterval: '0h0m' } },
      'spec.oauth.checkInterval: Invalid value: "string": checkInterval must be greater than zero',
    ],
    [
      'a web share without webVolume',
      { backendMode: 'web', target: '/srv/share' },
      'spec.webVolume: Required value: webVolume is required when backendMode is web',
    ],
    [
      'webVolume on a proxy share',
      { ...proxy, webVolume: { configMap: 'site' } },
      'spec.webVolume: Forbidden: webVolume is only allowed when backendMode is web',
    ],
    [
      'a webVolume with both sources',
      { backendMode: 'web', target: '/srv/share', webVolume: { configMap: 'a', persistentVolumeClaim: 'b' } },
      'spec.webVolume: Invalid value: "object": exactly one of configMap or persistentVolumeClaim must be set',
    ],
    [
      'a webVolume with no source',
      { backendMode: 'web', target: '/srv/share', webVolume: {} },
      'exactly one of configMap or persistentVolumeClaim must be set',
    ],
    [
      'a web target outside the mount',
      { backendMode: 'web', target: '/etc', webVolume: { configMap: 'site' } },
      'spec.target: Invalid value: "object": target must be an absolute path under /srv/share',
    ],
    [
      'a web target escaping the mount',
      { backendMode: 'web', target: '/srv/share/../../etc', webVolume: { configMap: 'site' } },
      'target must be an absolute path under /srv/share',
    ],
    [
      'a web target that only shares the prefix',
      { backendMode: 'web', target: '/srv/shared', webVolume: { configMap: 'site' } },
      'target must be an absolute path under /srv/share',
    ],
    ['a token that is not a DNS label', { ...proxy, token: 'My_Token' }, /spec\.token: Invalid value: "My_Token"/],
  ];
  it.each(cases)('rejects %s', async (_name, spec, expected) => {
    const message = await rejection(share(spec));
    if (typeof expected === 'string') expect(message).toContain(expected);
    else expect(message).toMatch(expected);
  });

  it('rejects changing, adding or removing the token, but allows other spec changes', async () => {
    const withToken = share({ ...proxy, token: 'stable' });
    expect(await rejection(withToken, (s) => ({ ...s, spec: { ...s.spec, token: 'other' } }))).toContain(
      'spec.token: Invalid value: "string": token is immutable',
    );

    const removed = await rejection(share({ ...proxy, token: 'stable2' }), (s) => {
      const { token: _token, ...spec } = s.spec ?? {};
      return { ...s, spec };
    });
    expect(removed).toContain('token cannot be added or removed after creation');

    const added = await rejection(share({ ...proxy }), (s) => ({ ...s, spec: { ...s.spec, token: 'late' } }));
    expect(added).toContain('token cannot be added or removed after creation');

    const created = await objects.create<Obj>(share({ ...proxy, token: 'stable3' }));
    const updated = await objects.replace<Obj>({
      ...created,
      spec: { ...created.spec, target: 'http://app:9090' },
    });
    expect(updated.spec?.target).toBe('http://app:9090');
    expect(updated.metadata?.generation).toBe(2);
  });

  it('keeps status in its subresource and prints Ready, Token and URL columns', async () => {
    const created = await objects.create<Obj>(share({ ...proxy, token: 'printed' }));
    const name = created.metadata!.name!;
    // The main resource ignores status; only the status subresource writes it.
    const ignored = await objects.replace<Obj>({ ...created, status: { token: 'nope' } });
    expect(ignored.status).toBeUndefined();
    await custom.replaceNamespacedCustomObjectStatus({
      group: 'svc.dev',
      version: 'v1alpha1',
      namespace: NS,
      plural: 'shares',
      name,
      body: {
        ...ignored,
        status: {
          token: 'printed',
          frontendEndpoints: ['https://printed.share.example.com/'],
          observedGeneration: 1,
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'Available',
              message: 'share is serving',
              lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
            },
          ],
        },
      },
    });
    const table = (await rawRequest(cp.kubeConfig, `/apis/svc.dev/v1alpha1/namespaces/${NS}/shares/${name}`, {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    })) as { columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] };
    const columns = table.columnDefinitions.map((c) => c.name);
    expect(columns).toEqual(['Name', 'Ready', 'Token', 'URL', 'Mode', 'Backend', 'Age']);
    const cells = table.rows[0]!.cells;
    expect(cells.slice(0, 6)).toEqual([
      name,
      'True',
      'printed',
      'https://printed.share.example.com/',
      'public',
      'proxy',
    ]);
  });
});

describe('Access validation', () => {
  const access = (spec: Record<string, unknown>): Obj => ({
    apiVersion: API_VERSION,
    kind: 'Access',
    metadata: { name: `access-${++seq}`, namespace: NS },
    spec,
  });

  it('accepts an access and defaults bindPort to 8080', async () => {
    const created = await objects.create<Obj>(access({ shareToken: 'abc123' }));
    expect(created.spec).toEqual({ shareToken: 'abc123', bindPort: 8080 });
  });

  it.each([
    ['a missing shareToken', { bindPort: 80 }, 'spec.shareToken: Required value'],
    ['a shareToken that is not a DNS label', { shareToken: 'a.b' }, 'spec.shareToken: Invalid value: "a.b"'],
    [
      'bindPort 0',
      { shareToken: 'abc', bindPort: 0 },
      'spec.bindPort: Invalid value: 0: spec.bindPort in body should be greater than or equal to 1',
    ],
    [
      'bindPort 70000',
      { shareToken: 'abc', bindPort: 70000 },
      'spec.bindPort in body should be less than or equal to 65535',
    ],
  ])('rejects %s', async (_name, spec, expected) => {
    expect(await rejection(access(spec))).toContain(expected);
  });
});

describe('AgentEnrollment validation', () => {
  const enrollment = (spec: Record<string, unknown>): Obj => ({
    apiVersion: API_VERSION,
    kind: 'AgentEnrollment',
    metadata: { name: `enroll-${++seq}`, namespace: NS },
    spec,
  });
  const ref = { name: 'svc-account', key: 'token' };

  it('accepts an enrollment', async () => {
    const created = await objects.create<Obj>(
      enrollment({ controllerUrl: 'https://svc.example.com', accountTokenSecretRef: ref, description: 'staging' }),
    );
    expect(created.spec?.controllerUrl).toBe('https://svc.example.com');
  });

  it.each([
    ['a missing controllerUrl', { accountTokenSecretRef: ref }, 'spec.controllerUrl: Required value'],
    [
      'a non-http controllerUrl',
      { controllerUrl: 'file:///etc/passwd', accountTokenSecretRef: ref },
      'spec.controllerUrl: Invalid value: "string": controllerUrl must be an absolute http:// or https:// URL',
    ],
    [
      'a missing Secret reference',
      { controllerUrl: 'https://svc.example.com' },
      'spec.accountTokenSecretRef: Required value',
    ],
    [
      'a Secret reference without key',
      { controllerUrl: 'https://svc.example.com', accountTokenSecretRef: { name: 'x' } },
      'spec.accountTokenSecretRef.key: Required value',
    ],
  ])('rejects %s', async (_name, spec, expected) => {
    expect(await rejection(enrollment(spec))).toContain(expected);
  });
});
