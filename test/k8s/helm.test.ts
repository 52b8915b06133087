/**
 * The Helm chart against the real control plane: `helm lint`, values.schema.json and template
 * failures, `helm template` output server-side dry-run applied, `helm install` (objects exist; no
 * kubelet, so pods never run), least-privilege RBAC checked with SelfSubjectAccessReviews as the
 * operator's ServiceAccount, and the operator started with the Deployment's own args and those
 * credentials reconciling a Share.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { shardKey, shardOf, shardSecretName } from '../../operator/auth-shards.ts';
import { parseInstallation } from '../../operator/frontend-secret.ts';
import { locateHelm } from './binaries.ts';
import {
  CHART,
  CHART_OAUTH,
  KUBE_VERSION,
  RELEASE,
  RELEASE_NS,
  findObject,
  helmRunner,
  selfCan,
  type HelmRunner,
  type Obj,
  type Run,
} from './helm-runner.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { freePort } from './processes.ts';
import { rawRequest, serverSideApply } from './raw.ts';

const ROOT = join(import.meta.dirname, '..', '..');

const oauth = {
  ...CHART_OAUTH,
  providers: [
    {
      name: 'dev',
      type: 'oidc',
      client_id: 'svc',
      client_secret: 'chart-test-client-secret',
      scopes: ['openid', 'email'],
      issuer: 'https://idp.example.com',
      supports_pkce: true,
    },
  ],
};

let cp: ControlPlane;
let work: string;
let helmBin: string;
let oauthValues: string;

/** Placeholders in test tables for values files written in beforeAll. */
const file = (arg: string): string =>
  arg === 'OAUTH' ? oauthValues : arg === 'NO_ISSUER' ? join(work, 'no-issuer.yaml') : arg;

interface Container {
  name: string;
  args?: string[];
  securityContext?: Record<string, unknown>;
  resources?: { requests?: Record<string, string> };
}
const containers = (deployment: Obj): Container[] =>
  (deployment as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec.containers;

async function get(kc: KubeConfig, path: string): Promise<Obj> {
  return (await rawRequest(kc, path)) as Obj;
}

async function createNamespace(name: string): Promise<void> {
  await serverSideApply(cp.kubeConfig, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

let runner: HelmRunner;
const helm = (...args: string[]): Promise<Run> => runner.helm(...args);
const template = (...args: string[]): Promise<Obj[]> => runner.template(...args);
const find = findObject;

beforeAll(async () => {
  helmBin = locateHelm();
  work = await mkdtemp(join(tmpdir(), 'svc-helm-test-'));
  runner = helmRunner(helmBin, work);
  oauthValues = join(work, 'oauth-values.yaml');
  await writeFile(oauthValues, toYaml({ frontend: { oauth } }));
  const { issuer: _issuer, ...noIssuer } = oauth.providers[0]!;
  await writeFile(join(work, 'no-issuer.yaml'), toYaml({ frontend: { oauth: { providers: [noIssuer] } } }));
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('helm lint', () => {
  it.each([
    ['minimal values', ['--set', 'shareDomain=share.example.com']],
    ['OAuth values', ['-f', 'OAUTH']],
    [
      'an existing Secret',
      ['--set', 'frontend.existingSecret=my-oauth,auth.host=auth.example.com,shareDomain=example.com'],
    ],
    [
      'one watched namespace, two replicas',
      ['-f', 'OAUTH', '--set', 'operator.watchNamespace=team-a,operator.replicas=2'],
    ],
  ])('is clean with %s', async (_name, args) => {
    const out = await helm('lint', CHART, '--strict', ...args.map(file));
    expect(out.stderr + out.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(out.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(out.code).toBe(0);
  });
});

describe('values validation', () => {
  it.each([
    ['an unknown pull policy', ['--set', 'image.pullPolicy=Sometimes'], "at '/image/pullPolicy': value must be one of"],
    ['a misspelt key', ['--set', 'operater.replicas=2'], "additional properties 'operater' not allowed"],
    [
      'a short signing key',
      ['--set', 'frontend.oauth.signing_key=short'],
      "at '/frontend/oauth/signing_key': minLength: got 5, want 32",
    ],
    [
      'an unknown provider type',
      ['--set', 'frontend.oauth.providers[0].type=github'],
      "at '/frontend/oauth/providers/0/type'",
    ],
    [
      'an oidc provider without issuer',
      ['-f', 'NO_ISSUER'],
      "at '/frontend/oauth/providers/0': missing property 'issuer'",
    ],
    [
      'a path in endpoint_url',
      ['--set', 'frontend.oauth.endpoint_url=https://auth.example.com/x'],
      "at '/frontend/oauth/endpoint_url'",
    ],
    ['a bad duration', ['--set', 'frontend.oauth.session_lifetime=6 hours'], "at '/frontend/oauth/session_lifetime'"],
    ['a bad share domain', ['--set', 'shareDomain=Share_Domain'], "at '/shareDomain'"],
    [
      'two replicas without leader election',
      ['--set', 'operator.replicas=2,operator.leaderElect=false'],
      "at '/operator/leaderElect': value must be true",
    ],
    ['the controller without an identity', ['--set', 'controller.enabled=true'], "at '/controller/identity'"],
    [
      'a misspelt public frontend key',
      ['--set', 'publicFrontend.replica=2'],
      "at '/publicFrontend': additional properties 'replica' not allowed",
    ],
    [
      'the public frontend without its endpoint URL',
      ['--set', 'publicFrontend.enabled=true'],
      "at '/publicFrontend/endpointUrl'",
    ],
    [
      'a path in the public frontend’s endpoint URL',
      ['--set', 'publicFrontend.endpointUrl=https://share.example.com/tunnel'],
      "at '/publicFrontend/endpointUrl'",
    ],
    [
      'a bad tunnel timeout',
      ['--set', 'publicFrontend.tunnel.streamIdleTimeout=forever'],
      "at '/publicFrontend/tunnel/streamIdleTimeout'",
    ],
  ])('rejects %s', async (_name, args, message) => {
    const out = await helm(
      'template',
      RELEASE,
      CHART,
      '--kube-version',
      KUBE_VERSION,
      '-f',
      oauthValues,
      ...args.map(file),
    );
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("values don't meet the specifications of the schema");
    expect(out.stderr).toContain(message);
  });

  it('rejects an incomplete oauth section, naming each missing field', async () => {
    const out = await helm(
      'template',
      RELEASE,
      CHART,
      '--kube-version',
      KUBE_VERSION,
      '--set',
      'frontend.oauth.cookie_domain=example.com',
    );
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("missing properties 'endpoint_url', 'cookie_name'");
  });

  it.each([
    ['no share domain', [], 'shareDomain is required'],
    [
      'an existing Secret and oauth values',
      ['-f', 'OAUTH', '--set', 'frontend.existingSecret=x'],
      'frontend.existingSecret and frontend.oauth are mutually exclusive',
    ],
    [
      'an existing Secret without auth.host',
      ['--set', 'frontend.existingSecret=x,shareDomain=example.com'],
      'auth.host is required with frontend.existingSecret',
    ],
    [
      'the public frontend without the controller',
      ['-f', 'OAUTH', '--set', 'publicFrontend.enabled=true,publicFrontend.endpointUrl=https://share.example.com'],
      'publicFrontend.enabled requires controller.enabled: the public frontend reads the share registry from the controller API',
    ],
  ])('fails to render with %s', async (_name, args, message) => {
    const out = await helm('template', RELEASE, CHART, '--kube-version', KUBE_VERSION, ...args.map(file));
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});

describe('rendered manifests', () => {
  it('ship CRDs identical to crds/', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .sort();
    const top = files(join(ROOT, 'crds'));
    expect(files(join(CHART, 'crds'))).toEqual(top);
    for (const f of top) {
      expect(readFileSync(join(CHART, 'crds', f), 'utf8'), f).toBe(readFileSync(join(ROOT, 'crds', f), 'utf8'));
    }
  });

  it('hold an oauth.yaml the operator accepts, with the pods’ bind address', async () => {
    const objs = await template('-f', oauthValues);
    const secret = find(objs, 'Secret', 'svc-frontend') as Obj & { data: Record<string, string> };
    const parsed = parseInstallation(secret.data);
    expect(parsed).toMatchObject({ ok: true });
    if (parsed.ok) expect(parsed.value.section.bind_address).toBe('0.0.0.0:8080');
  });

  it('run the operator with the contract flags', async () => {
    const objs = await template('-f', oauthValues, '--set', 'image.tag=1.2.3');
    const [operator] = containers(find(objs, 'Deployment', 'svc-operator'));
    expect(operator?.args).toEqual([
      'operator',
      '--namespace-scope=all',
      `--frontend-secret=${RELEASE_NS}/svc-frontend`,
      `--auth-secret=${RELEASE_NS}/svc-auth-frontend`,
      '--share-domain=share.example.com',
      '--image=svc:1.2.3',
      '--pod-settings={"imagePullPolicy":"IfNotPresent"}',
      '--leader-elect',
      '--lease-name=svc-operator',
      '--metrics-listen=0.0.0.0:8080',
      '--concurrency=16',
      '--unenroll-deadline=10m',
      '--auth-share-quota=524288',
      '--reserved-host=auth.share.example.com',
      '--ingress-tls=none',
    ]);
    const [frontend] = containers(find(objs, 'Deployment', 'svc-auth'));
    expect(frontend?.args).toEqual(['frontend', '--config', '/etc/svc/frontend/config.yaml']);
    const ingress = find(objs, 'Ingress', 'svc-auth') as Obj & { spec: { rules: { host: string }[] } };
    expect(ingress.spec.rules.map((r) => r.host)).toEqual(['auth.share.example.com']);
  });

  it('pass the share Ingress class and annotations to the operator', async () => {
    const objs = await template(
      '-f',
      oauthValues,
      '--set',
      'operator.shareIngress.className=nginx',
      '--set',
      'operator.shareIngress.annotations.cert-manager\\.io/cluster-issuer=wildcard',
    );
    const [operator] = containers(find(objs, 'Deployment', 'svc-operator'));
    expect(operator?.args).toContain('--ingress-class=nginx');
    expect(operator?.args).toContain('--ingress-annotation=cert-manager.io/cluster-issuer=wildcard');
  });

  it('leave out the auth endpoint and frontend Secret when OAuth is not configured', async () => {
    const objs = await template('--set', 'shareDomain=share.example.com');
    expect(objs.filter((o) => o.metadata?.name?.startsWith('svc-auth') || o.kind === 'Secret')).toEqual([]);
    expect(containers(find(objs, 'Deployment', 'svc-operator'))[0]?.args).toContain(
      `--frontend-secret=${RELEASE_NS}/svc-frontend`,
    );
  });

  it('harden every container (non-root, read-only root, no capabilities) and request resources', async () => {
    const objs = await template('-f', oauthValues);
    const deployments = objs.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata?.name).sort()).toEqual(['svc-auth', 'svc-operator']);
    for (const d of deployments) {
      for (const c of containers(d)) {
        expect(c.securityContext, `${d.metadata?.name}/${c.name}`).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(Object.keys(c.resources?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      }
    }
  });

  it.each([
    ['cluster-wide', []],
    ['one watched namespace', ['--set', 'operator.watchNamespace=team-a']],
    [
      'pod extras and the share pod NetworkPolicy',
      [
        '--set',
        [
          'operator.priorityClassName=platform-high',
          'operator.podLabels.team=platform',
          'auth.topologySpreadConstraints[0].maxSkew=1',
          'auth.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
          'auth.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
          'auth.extraEnv[0].name=HTTPS_PROXY',
          'auth.extraEnv[0].value=http://proxy.corp:3128',
          'auth.extraVolumes[0].name=corp-ca',
          'auth.extraVolumes[0].configMap.name=corp-ca',
          'auth.extraVolumeMounts[0].name=corp-ca',
          'auth.extraVolumeMounts[0].mountPath=/etc/ssl/corp',
          'operator.sharePods.priorityClassName=tenant-low',
          'sharePodNetworkPolicy.enabled=true',
          'sharePodNetworkPolicy.namespaces[0]=team-a',
        ].join(','),
      ],
    ],
  ])('pass a server-side dry run on the API server (%s)', async (_name, extra) => {
    await createNamespace(RELEASE_NS);
    await createNamespace('team-a');
    const objs = await template('-f', oauthValues, '--include-crds', ...extra);
    expect(objs.length).toBeGreaterThan(10);
    const applied: string[] = [];
    for (const obj of objs) {
      const result = await serverSideApply(cp.kubeConfig, obj, {
        dryRun: true,
        namespace: RELEASE_NS,
        fieldManager: 'helm-test',
      });
      expect(result.kind).toBe(obj.kind);
      applied.push(`${obj.kind}/${obj.metadata?.name}`);
    }
    expect(applied).toContain('CustomResourceDefinition/shares.svc.dev');
    const scoped = extra.some((a) => a.includes('watchNamespace'));
    expect(applied).toContain(scoped ? 'Role/svc-operator' : 'ClusterRole/svc-operator');
    if (extra.some((a) => a.includes('sharePodNetworkPolicy')))
      expect(applied).toContain('NetworkPolicy/svc-share-pods');
    // A dry run persists nothing.
    await expect(
      rawRequest(cp.kubeConfig, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/shares.svc.dev'),
    ).rejects.toMatchObject({ code: 404 });
  });
});

describe('helm install into the real API server', () => {
  const saUser = `system:serviceaccount:${RELEASE_NS}:svc-operator`;
  let sa: KubeConfig;

  beforeAll(async () => {
    const out = await runner.install(cp.kubeconfigPath, '-f', oauthValues);
    expect(out.stdout).toContain('svc 0.1.0 is installed in namespace svc-system');
    expect(out.stdout).toContain('Share hosts get no TLS (operator.shareIngress.tls.mode none)');
    sa = (await cp.userKubeConfig(saUser, ['system:serviceaccounts', `system:serviceaccounts:${RELEASE_NS}`]))
      .kubeConfig;
  });

  it('creates the CRDs (Established) and the release objects', async () => {
    for (const crd of ['shares.svc.dev', 'accesses.svc.dev', 'agentenrollments.svc.dev']) {
      const obj = (await get(
        cp.kubeConfig,
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`,
      )) as Obj & {
        status: { conditions: { type: string; status: string }[] };
      };
      expect(obj.status.conditions.find((c) => c.type === 'Established')?.status, crd).toBe('True');
    }
    const ns = `/api/v1/namespaces/${RELEASE_NS}`;
    const apps = `/apis/apps/v1/namespaces/${RELEASE_NS}`;
    for (const path of [
      `${ns}/serviceaccounts/svc-operator`,
      `${ns}/secrets/svc-frontend`,
      `${ns}/services/svc-auth`,
      `${ns}/services/svc-operator-metrics`,
      `${apps}/deployments/svc-operator`,
      `${apps}/deployments/svc-auth`,
      `/apis/networking.k8s.io/v1/namespaces/${RELEASE_NS}/ingresses/svc-auth`,
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/svc-operator',
      '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/svc-operator',
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${RELEASE_NS}/roles/svc-operator-installation`,
    ]) {
      const obj = await get(cp.kubeConfig, path);
      expect((obj.metadata?.labels ?? {})['app.kubernetes.io/instance'], path).toBe(RELEASE);
    }
    const list = await helm('list', '-n', RELEASE_NS, '--kubeconfig', cp.kubeconfigPath, '-o', 'json');
    expect(JSON.parse(list.stdout)).toMatchObject([{ name: RELEASE, status: 'deployed' }]);
  });

  it('grants the operator what it needs and nothing more', async () => {
    const can = (attrs: Record<string, string>): Promise<boolean> => selfCan(sa, attrs);
    const allowed: Array<Record<string, string>> = [
      { group: 'svc.dev', resource: 'shares', verb: 'watch' },
      { group: 'svc.dev', resource: 'shares', subresource: 'status', verb: 'patch', namespace: 'team-a' },
      { group: 'svc.dev', resource: 'accesses', subresource: 'status', verb: 'update', namespace: 'team-a' },
      { group: 'apps', resource: 'deployments', verb: 'patch', namespace: 'team-a' },
      { group: 'networking.k8s.io', resource: 'ingresses', verb: 'delete', namespace: 'team-a' },
      { group: '', resource: 'secrets', verb: 'list' },
      { group: '', resource: 'events', verb: 'create', namespace: 'team-a' },
      { group: 'coordination.k8s.io', resource: 'leases', verb: 'create', namespace: RELEASE_NS },
      { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: RELEASE_NS, name: 'svc-operator' },
      // AgentEnrollments: the finalizer, and the environment agent's Role (granting needs holding).
      { group: 'svc.dev', resource: 'agentenrollments', verb: 'patch', namespace: 'team-a' },
      { group: 'svc.dev', resource: 'shares', verb: 'delete', namespace: 'team-a' },
      { group: 'rbac.authorization.k8s.io', resource: 'roles', verb: 'create', namespace: 'team-a' },
    ];
    const denied: Array<Record<string, string>> = [
      { group: '', resource: 'pods', verb: 'create', namespace: 'team-a' },
      { group: 'rbac.authorization.k8s.io', resource: 'clusterrolebindings', verb: 'create' },
      { group: 'rbac.authorization.k8s.io', resource: 'roles', verb: 'escalate', namespace: 'team-a' },
      { group: '', resource: 'configmaps', verb: 'get', namespace: 'team-a' },
      { group: 'rbac.authorization.k8s.io', resource: 'clusterroles', verb: 'create' },
      { group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', verb: 'update' },
      { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: RELEASE_NS, name: 'other' },
      { group: 'coordination.k8s.io', resource: 'leases', verb: 'create', namespace: 'team-a' },
    ];
    for (const a of allowed) expect(await can(a), JSON.stringify(a)).toBe(true);
    for (const a of denied) expect(await can(a), JSON.stringify(a)).toBe(false);
  });

  it('runs an operator that, with the Deployment’s args and ServiceAccount, reconciles a Share', async () => {
    const deployment = await get(cp.kubeConfig, `/apis/apps/v1/namespaces/${RELEASE_NS}/deployments/svc-operator`);
    // Same flags as the pod; only the metrics listener moves to loopback (the pod's 0.0.0.0:8080 may be taken here).
    const port = await freePort();
    const args = containers(deployment)[0]!.args!.map((a) =>
      a.startsWith('--metrics-listen=') ? `--metrics-listen=127.0.0.1:${port}` : a,
    );
    const { kubeconfigPath } = await cp.userKubeConfig(saUser, [
      'system:serviceaccounts',
      `system:serviceaccounts:${RELEASE_NS}`,
    ]);
    let logs = '';
    const operator = spawn(join(ROOT, 'node_modules', '.bin', 'node'), [join(ROOT, 'bin', 'svc.js'), ...args], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    operator.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    try {
      await createNamespace('team-a');
      // The auth endpoint's shard Secret of team-a/app: written through the chart's RBAC and admission policy.
      const appShard = shardSecretName('svc-auth-frontend', shardOf('team-a', 'app', shardKey(oauth.signing_key)));
      await serverSideApply(cp.kubeConfig, {
        apiVersion: 'svc.dev/v1alpha1',
        kind: 'Share',
        metadata: { name: 'app', namespace: 'team-a' },
        spec: {
          backendMode: 'proxy',
          target: 'http://app.team-a.svc:8080',
          token: 'chartapp',
          oauth: { provider: 'dev' },
        },
      } as KubernetesObject);
      await expect
        .poll(
          async () => {
            const found: string[] = [];
            for (const path of [
              '/apis/apps/v1/namespaces/team-a/deployments/svc-share-app',
              '/api/v1/namespaces/team-a/services/svc-share-app',
              '/apis/networking.k8s.io/v1/namespaces/team-a/ingresses/svc-share-app',
              '/api/v1/namespaces/team-a/secrets/svc-share-app-frontend',
              `/api/v1/namespaces/${RELEASE_NS}/secrets/svc-auth-frontend`,
              `/api/v1/namespaces/${RELEASE_NS}/secrets/${appShard}`,
            ]) {
              try {
                await get(cp.kubeConfig, path);
                found.push(path.split('/').slice(-2).join('/'));
              } catch {
                // not there yet
              }
            }
            return found;
          },
          { timeout: 45_000, interval: 500 },
        )
        .toEqual([
          'deployments/svc-share-app',
          'services/svc-share-app',
          'ingresses/svc-share-app',
          'secrets/svc-share-app-frontend',
          'secrets/svc-auth-frontend',
          `secrets/${appShard}`,
        ]);
      await expect
        .poll(
          async () =>
            (
              (await get(cp.kubeConfig, '/apis/svc.dev/v1alpha1/namespaces/team-a/shares/app')).status as
                { token?: string } | undefined
            )?.token,
          {
            timeout: 20_000,
          },
        )
        .toBe('chartapp');
      const ingress = (await get(
        cp.kubeConfig,
        '/apis/networking.k8s.io/v1/namespaces/team-a/ingresses/svc-share-app',
      )) as Obj & {
        spec: { rules: { host: string }[] };
      };
      expect(ingress.spec.rules[0]?.host).toBe('chartapp.share.example.com');
      expect(logs).not.toMatch(/forbidden/i);
    } finally {
      operator.kill('SIGTERM');
      await new Promise((resolve) => operator.once('exit', resolve));
    }
  }, 90_000);

  it('uninstalls the release but keeps the CRDs (and so every Share)', async () => {
    const out = await helm('uninstall', RELEASE, '-n', RELEASE_NS, '--kubeconfig', cp.kubeconfigPath);
    expect(out.code).toBe(0);
    await expect(
      get(cp.kubeConfig, `/apis/apps/v1/namespaces/${RELEASE_NS}/deployments/svc-operator`),
    ).rejects.toMatchObject({ code: 404 });
    await expect(
      get(cp.kubeConfig, '/apis/rbac.authorization.k8s.io/v1/clusterroles/svc-operator'),
    ).rejects.toMatchObject({ code: 404 });
    const share = await get(cp.kubeConfig, '/apis/svc.dev/v1alpha1/namespaces/team-a/shares/app');
    expect(share.metadata?.name).toBe('app');
  });
});
