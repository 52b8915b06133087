/**
 * The controller in the Helm chart (templates/controller.yaml) against the real control plane:
 * lint and values validation, the rendered objects (dry-run applied), and `helm install` whose
 * controller then runs as a local process exactly as its pod would — the init container's command
 * copying the identity, the container's args and config from the rendered ConfigMap, credentials of
 * its ServiceAccount — serving the API with its records as Secrets in the release namespace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { parsePublicFrontendConfig } from '../../sidecar/tunnel/public-frontend-config.ts';
import { locateHelm } from './binaries.ts';
import {
  CHART,
  CHART_OAUTH,
  RELEASE,
  RELEASE_NS,
  findObject,
  helmRunner,
  run,
  selfCan,
  type HelmRunner,
  type Obj,
  type Run,
} from './helm-runner.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { eventually } from './operator-fixture.ts';
import { rawRequest, serverSideApply } from './raw.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const SVC = join(ROOT, 'bin', 'svc.js');

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  initContainers: Container[];
  containers: Container[];
  volumes: { name: string; configMap?: { name: string }; secret?: { secretName: string } }[];
  serviceAccountName: string;
}

let cp: ControlPlane;
let work: string;
let helmBin: string;
let identityFile: string;
let zId: string;
let controllerProcess: ChildProcess | undefined;
let apiUrl: string | undefined;
let accountToken = '';

const noIdentity = ['--set', 'shareDomain=share.example.com', '--set', 'controller.enabled=true'];
const base = (): string[] => [...noIdentity, '--set-file', `controller.identity.json=${identityFile}`];
const publicFrontend = ['--set', 'publicFrontend.enabled=true,publicFrontend.endpointUrl=https://share.example.com'];

const podOf = (deployment: Obj): PodSpec =>
  (deployment as { spec: { template: { spec: PodSpec } } }).spec.template.spec;

let runner: HelmRunner;
const helm = (...args: string[]): Promise<Run> => runner.helm(...args);
const template = (...args: string[]): Promise<Obj[]> => runner.template(...args);
const find = findObject;

beforeAll(async () => {
  helmBin = locateHelm();
  work = await mkdtemp(join(tmpdir(), 'svc-ctl-chart-'));
  runner = helmRunner(helmBin, work);
  identityFile = join(work, 'identity.json');
  const created = await run(NODE, [SVC, 'admin', 'create', 'identity', 'cluster', '--output', identityFile]);
  expect(created.code, created.stderr).toBe(0);
  zId = created.stdout.trim();
  cp = await startControlPlane();
}, 120_000);

afterAll(async () => {
  if (controllerProcess && controllerProcess.exitCode === null) {
    const exited = new Promise((resolve) => controllerProcess?.once('exit', resolve));
    controllerProcess.kill('SIGTERM');
    await exited;
  }
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('controller values', () => {
  it.each([
    ['an identity file', []],
    ['an existing Secret', ['--set', `controller.identity.existingSecret=ctl-id,controller.identity.zId=ZID`]],
    ['an Ingress', ['--set', 'controller.ingress.enabled=true,controller.ingress.host=api.example.com']],
  ])('lint clean with %s', async (name, extra) => {
    const identity = name === 'an existing Secret' ? noIdentity : base();
    const out = await helm('lint', CHART, '--strict', ...identity, ...extra.map((a) => a.replace('ZID', zId)));
    expect(out.stderr + out.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(out.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it.each([
    ['no identity', [], "at '/controller/identity'"],
    [
      'an identity file and an existing Secret',
      ['--set', 'controller.identity.existingSecret=x'],
      "at '/controller/identity'",
    ],
    ['a malformed z_id', ['--set', 'controller.identity.zId=nope'], "at '/controller/identity/zId'"],
    ['an Ingress without host', ['--set', 'controller.ingress.enabled=true'], "at '/controller/ingress/host'"],
    ['a bad agent timeout', ['--set', 'controller.agentTimeout=soon'], "at '/controller/agentTimeout'"],
    [
      'a replica count (one controller holds the agents’ connections)',
      ['--set', 'controller.replicas=2'],
      "additional properties 'replicas'",
    ],
  ])('rejects %s', async (name, extra, message) => {
    const out = await helm('template', RELEASE, CHART, ...(name === 'no identity' ? noIdentity : base()), ...extra);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });

  it.each([
    [
      'a z_id other than the file’s',
      ['--set', 'controller.identity.zId=ctlaaaaaaaaaaaaaaaa'],
      'does not match the zId',
    ],
  ])('fails to render with %s', async (_name, extra, message) => {
    const out = await helm('template', RELEASE, CHART, ...base(), ...extra);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});

describe('rendered controller', () => {
  it('runs svc controller --store kubernetes with the identity as agent_controller, one replica', async () => {
    const objs = await template(...base());
    const deployment = find(objs, 'Deployment', 'svc-controller') as Obj & {
      spec: { replicas: number; strategy: { type: string } };
    };
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy.type).toBe('Recreate');
    const pod = podOf(deployment);
    expect(pod.serviceAccountName).toBe('svc-controller');
    expect(pod.containers[0]?.args).toEqual([
      'controller',
      '--config=/etc/svc/controller/controller.yaml',
      '--store=kubernetes',
      `--namespace=${RELEASE_NS}`,
    ]);
    const config = find(objs, 'ConfigMap', 'svc-controller') as Obj & { data: Record<string, string> };
    expect(config.data['controller.yaml']).toContain(`z_id: ${zId}`);
    const role = find(objs, 'Role', 'svc-controller') as Obj & { rules: unknown[] };
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'delete'] },
    ]);
    const service = find(objs, 'Service', 'svc-controller') as Obj & { spec: { ports: { port: number }[] } };
    expect(service.spec.ports[0]?.port).toBe(80);
    const probes = pod.containers[0] as Container & Record<string, unknown>;
    expect(probes?.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'http' } });
    expect(probes?.livenessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' } });
  });

  it('passes a server-side dry run', async () => {
    await serverSideApply(cp.kubeConfig, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE_NS } });
    const objs = await template(
      ...base(),
      ...publicFrontend,
      '--set',
      'controller.ingress.enabled=true,controller.ingress.host=api.example.com',
      '--include-crds',
    );
    for (const obj of objs) {
      const applied = await serverSideApply(cp.kubeConfig, obj, { dryRun: true, namespace: RELEASE_NS });
      expect(applied.kind).toBe(obj.kind);
    }
    expect(objs.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual(
      expect.arrayContaining([
        'Ingress/svc-controller',
        'Deployment/svc-public-frontend',
        'PodDisruptionBudget/svc-public-frontend',
        'Ingress/svc-public-frontend',
        'Role/svc-public-frontend',
        'Secret/svc-frontend-credential',
      ]),
    );
  });
});

describe('helm install with the controller', () => {
  const saUser = `system:serviceaccount:${RELEASE_NS}:svc-controller`;
  let sa: { kubeconfigPath: string; kubeConfig: KubeConfig };

  beforeAll(async () => {
    await runner.install(cp.kubeconfigPath, ...base());
    sa = await cp.userKubeConfig(saUser, ['system:serviceaccounts', `system:serviceaccounts:${RELEASE_NS}`]);
  });

  it('grants the controller Secrets in its namespace and nothing more', async () => {
    const can = (attrs: Record<string, string>): Promise<boolean> => selfCan(sa.kubeConfig, attrs);
    for (const verb of ['get', 'list', 'create', 'delete']) {
      expect(await can({ resource: 'secrets', verb, namespace: RELEASE_NS }), verb).toBe(true);
    }
    expect(await can({ resource: 'secrets', verb: 'get', namespace: 'default' })).toBe(false);
    expect(await can({ resource: 'secrets', verb: 'update', namespace: RELEASE_NS })).toBe(false);
    expect(await can({ resource: 'configmaps', verb: 'get', namespace: RELEASE_NS })).toBe(false);
    expect(await can({ group: 'svc.dev', resource: 'shares', verb: 'list' })).toBe(false);
  });

  it('runs as its pod would: identity copied by the init container, API served, records as Secrets', async () => {
    const deployment = (await rawRequest(
      cp.kubeConfig,
      `/apis/apps/v1/namespaces/${RELEASE_NS}/deployments/svc-controller`,
    )) as Obj;
    const pod = podOf(deployment);
    // Volumes as the kubelet would provide them: the ConfigMap and Secret items as files, emptyDirs as folders.
    const dirs = new Map<string, string>();
    for (const volume of pod.volumes) {
      const dir = join(work, 'pod', volume.name);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      dirs.set(volume.name, dir);
      const source = volume.configMap
        ? (
            (await rawRequest(
              cp.kubeConfig,
              `/api/v1/namespaces/${RELEASE_NS}/configmaps/${volume.configMap.name}`,
            )) as { data: Record<string, string> }
          ).data
        : volume.secret
          ? Object.fromEntries(
              Object.entries(
                (
                  (await rawRequest(
                    cp.kubeConfig,
                    `/api/v1/namespaces/${RELEASE_NS}/secrets/${volume.secret.secretName}`,
                  )) as { data: Record<string, string> }
                ).data,
              ).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
            )
          : {};
      for (const [key, value] of Object.entries(source)) await writeFile(join(dir, key), value, { mode: 0o440 });
    }
    const rewrite =
      (c: Container) =>
      (arg: string): string => {
        for (const m of c.volumeMounts ?? []) {
          if (arg.startsWith(`${m.mountPath}/`)) return join(dirs.get(m.name) ?? '', arg.slice(m.mountPath.length + 1));
          if (arg.includes(`=${m.mountPath}/`)) return arg.replace(`${m.mountPath}/`, `${dirs.get(m.name) ?? ''}/`);
        }
        return arg;
      };
    const init = pod.initContainers[0]!;
    const [command, ...initArgs] = init.command!;
    expect(command).toBe('node');
    const copied = await run(NODE, initArgs.map(rewrite(init)));
    expect(copied.code, copied.stderr).toBe(0);
    const identity = join(dirs.get('identity')!, 'identity.json');
    expect((await stat(identity)).mode & 0o777).toBe(0o600);
    expect(await readFile(identity, 'utf8')).toBe(await readFile(identityFile, 'utf8'));

    // The config names the identity at its in-pod path: point it at the copy.
    const container = pod.containers[0]!;
    const configPath = join(dirs.get('config')!, 'controller.yaml');
    await writeFile(
      configPath,
      (await readFile(configPath, 'utf8')).replace('/run/svc/identity/identity.json', identity),
    );
    const child: ChildProcess = (controllerProcess = spawn(
      NODE,
      [SVC, ...container.args!.map(rewrite(container)), '--listen', '127.0.0.1:0'],
      { env: { ...process.env, KUBECONFIG: sa.kubeconfigPath, SVC_DATA_DIR: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    ));
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    {
      apiUrl = await eventually(
        () => Promise.resolve(/api:\s+(http:\/\/\S+\/api\/v1)/.exec(output)?.[1]),
        'controller ready',
        30_000,
      );
      expect(output).toContain('agent remoting enabled');
      // The readiness probe's path: the store (the API server, with the pod's own Role) answers.
      const ready = await fetch(`${new URL(apiUrl).origin}/readyz`);
      expect([ready.status, await ready.text()]).toEqual([200, 'ok\n']);
      expect(output).toContain(`store:     kubernetes, namespace ${RELEASE_NS}`);
      const account = await run(
        NODE,
        [SVC, 'admin', 'create', 'account', 'chart@example.com', '--store', 'kubernetes', '--namespace', RELEASE_NS],
        {
          KUBECONFIG: sa.kubeconfigPath,
        },
      );
      expect(account.code, account.stderr).toBe(0);
      accountToken = account.stdout.trim();
      const res = await fetch(`${apiUrl}/environment/enable`, {
        method: 'POST',
        headers: { 'content-type': MEDIA_TYPE, 'x-token': account.stdout.trim() },
        body: JSON.stringify({ description: 'chart test' }),
      });
      expect(res.status).toBe(200);
      const { envZId } = (await res.json()) as { envZId: string };
      const secrets = (await rawRequest(
        cp.kubeConfig,
        `/api/v1/namespaces/${RELEASE_NS}/secrets?labelSelector=app.kubernetes.io/managed-by%3Dsvc-controller`,
      )) as { items: { metadata: { name: string } }[] };
      expect(secrets.items.map((s) => s.metadata.name)).toContain(`svc-env-${envZId}`);
      expect(output).not.toMatch(/forbidden/i);
    }
  }, 60_000);

  it('the chart’s operator, with its ServiceAccount, enrolls a namespace with that controller', async () => {
    expect(apiUrl, 'the controller of the previous test').toBeDefined();
    const deployment = (await rawRequest(
      cp.kubeConfig,
      `/apis/apps/v1/namespaces/${RELEASE_NS}/deployments/svc-operator`,
    )) as Obj;
    const args = podOf(deployment).containers[0]!.args!.map((a) =>
      a.startsWith('--metrics-listen=') ? '--metrics-listen=127.0.0.1:0' : a,
    );
    const operatorUser = await cp.userKubeConfig(`system:serviceaccount:${RELEASE_NS}:svc-operator`, [
      'system:serviceaccounts',
      `system:serviceaccounts:${RELEASE_NS}`,
    ]);
    const operator = spawn(NODE, [SVC, ...args], {
      env: { ...process.env, KUBECONFIG: operatorUser.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let logs = '';
    operator.stdout.on('data', (c: Buffer) => (logs += c.toString()));
    operator.stderr.on('data', (c: Buffer) => (logs += c.toString()));
    const ns = 'team-b';
    const enrollment = `/apis/svc.dev/v1alpha1/namespaces/${ns}/agentenrollments/team`;
    try {
      await serverSideApply(cp.kubeConfig, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      await serverSideApply(cp.kubeConfig, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'account', namespace: ns },
        stringData: { token: accountToken },
      } as KubernetesObject);
      await serverSideApply(cp.kubeConfig, {
        apiVersion: 'svc.dev/v1alpha1',
        kind: 'AgentEnrollment',
        metadata: { name: 'team', namespace: ns },
        spec: { controllerUrl: new URL(apiUrl!).origin, accountTokenSecretRef: { name: 'account', key: 'token' } },
      } as KubernetesObject);
      const ready = await eventually(
        async () => {
          const e = (await rawRequest(cp.kubeConfig, enrollment)) as Obj & {
            status?: { enrolled?: boolean; conditions?: { type: string; status: string }[] };
          };
          return e.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? e : undefined;
        },
        'AgentEnrollment Ready',
        45_000,
      );
      expect(ready.status?.enrolled).toBe(true);
      // The Role granting Shares/Accesses was created by the operator's own (non-escalating) rights.
      const role = (await rawRequest(
        cp.kubeConfig,
        `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/svc-agent-team`,
      )) as Obj & { rules: { resources: string[] }[] };
      expect(role.rules[0]?.resources).toEqual(['shares', 'accesses']);
      await rawRequest(cp.kubeConfig, enrollment, { method: 'DELETE' });
      await eventually(
        async () => {
          try {
            await rawRequest(cp.kubeConfig, enrollment);
            return false;
          } catch {
            return true;
          }
        },
        'the AgentEnrollment to be unenrolled and gone',
        30_000,
      );
      expect(logs).not.toMatch(/forbidden/i);
    } finally {
      operator.kill('SIGTERM');
      await new Promise((resolve) => operator.once('exit', resolve));
    }
  }, 90_000);
});

interface FrontendContainer extends Container {
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  securityContext?: Record<string, unknown>;
}
interface FrontendPod {
  serviceAccountName: string;
  securityContext: Record<string, unknown>;
  initContainers: FrontendContainer[];
  containers: FrontendContainer[];
  volumes: { name: string; secret?: { secretName: string; items?: { key: string; path: string }[] } }[];
  affinity: unknown;
}
interface FrontendDeployment {
  spec: { replicas: number; template: { metadata: { annotations: Record<string, string> }; spec: FrontendPod } };
}
const decode = (secret: Obj, key: string): string =>
  Buffer.from((secret as { data: Record<string, string> }).data[key] ?? '', 'base64').toString();

/**
 * Runs the public frontend's init container as a local process, its volumes as the kubelet would
 * provide them (the rendered config Secret, and an oauth.yaml when frontend.existingSecret is used):
 * the file the frontend reads, and the folder where the credential is mounted.
 */
async function runConfigInit(objs: Obj[], oauthYaml?: string): Promise<{ file: string; dir: string }> {
  const pod = (find(objs, 'Deployment', 'svc-public-frontend') as Obj & FrontendDeployment).spec.template.spec;
  const init = pod.initContainers[0]!;
  const root = await mkdtemp(join(work, 'pf-init-'));
  const source: Record<string, Record<string, string>> = {
    'config-source': {
      'public-frontend.yaml': decode(find(objs, 'Secret', 'svc-public-frontend'), 'public-frontend.yaml'),
    },
    'oauth-source': oauthYaml === undefined ? {} : { 'oauth.yaml': oauthYaml },
    config: {},
  };
  const mounts = new Map<string, string>();
  for (const m of init.volumeMounts ?? []) {
    const dir = join(root, m.name);
    await mkdir(dir, { recursive: true });
    for (const [key, value] of Object.entries(source[m.name] ?? {})) await writeFile(join(dir, key), value);
    mounts.set(m.mountPath, dir);
  }
  const local = (arg: string): string => {
    for (const [path, dir] of mounts) if (arg.startsWith(`${path}/`)) return join(dir, arg.slice(path.length + 1));
    return arg;
  };
  const [command, ...args] = init.command!;
  expect(command).toBe('node');
  // Twice: a pod sandbox restarted on its node re-runs the init container over the kept volume.
  for (let i = 0; i < 2; i++) {
    const ran = await run(NODE, args.map(local));
    expect(ran.code, ran.stderr).toBe(0);
  }
  return { file: join(root, 'config', 'public-frontend.yaml'), dir: join(root, 'config') };
}

describe('public frontend values', () => {
  it.each([
    ['the defaults', []],
    [
      'one replica, its own credential Secret, TLS and tunnel limits',
      [
        '--set',
        'publicFrontend.replicas=1,publicFrontend.credential.existingSecret=cred,publicFrontend.tunnel.maxStreamsPerTunnel=50',
        '--set',
        'publicFrontend.ingress.tls[0].secretName=wildcard,publicFrontend.ingress.tls[0].hosts[0]=*.share.example.com',
      ],
    ],
  ])('lint clean with %s', async (_name, extra) => {
    const out = await helm('lint', CHART, '--strict', ...base(), ...publicFrontend, ...extra);
    expect(out.stderr + out.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    expect(out.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
  });

  it.each([
    ['an unknown key', ['--set', 'publicFrontend.hosts=x'], "at '/publicFrontend': additional properties 'hosts'"],
    ['an unknown tunnel limit', ['--set', 'publicFrontend.tunnel.maxBytes=1'], "additional properties 'maxBytes'"],
    ['zero replicas', ['--set', 'publicFrontend.replicas=0'], "at '/publicFrontend/replicas'"],
    ['the peer port on the HTTP port', ['--set', 'publicFrontend.peerPort=8080'], "at '/publicFrontend/peerPort'"],
    ['a bad lease duration', ['--set', 'publicFrontend.leaseDuration=15'], "at '/publicFrontend/leaseDuration'"],
  ])('rejects %s', async (_name, extra, message) => {
    const out = await helm('template', RELEASE, CHART, ...base(), ...publicFrontend, ...extra);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });

  it('names the missing controller when enabled without it', async () => {
    const out = await helm(
      'template',
      RELEASE,
      CHART,
      ...base(),
      ...publicFrontend,
      '--set',
      'controller.enabled=false',
    );
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain('publicFrontend.enabled requires controller.enabled');
  });
});

describe('rendered public frontend', () => {
  const oauth = CHART_OAUTH;
  let oauthValues: string;
  let objs: Obj[];
  beforeAll(async () => {
    oauthValues = join(work, 'pf-oauth.yaml');
    await writeFile(
      oauthValues,
      toYaml({ frontend: { oauth }, publicFrontend: { tunnel: { maxStreamsPerTunnel: 64, pingInterval: '20s' } } }),
    );
    objs = await template(...base(), ...publicFrontend, '-f', oauthValues);
  });

  it('runs svc public-frontend with the contract config, the pod’s identity from the downward API and probes', () => {
    const deployment = find(objs, 'Deployment', 'svc-public-frontend') as Obj & FrontendDeployment;
    expect(deployment.spec.replicas).toBe(2);
    const pod = deployment.spec.template.spec;
    expect(pod.serviceAccountName).toBe('svc-public-frontend');
    const [container] = pod.containers;
    expect(container?.args).toEqual(['public-frontend', '--config', '/etc/svc/public-frontend.yaml']);
    expect(container?.env).toEqual([
      { name: 'SVC_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'SVC_POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'SVC_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ]);
    expect(container?.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', 8080],
      ['peer', 8444],
      ['metrics', 9090],
    ]);
    expect(container?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    for (const c of [...pod.initContainers, ...pod.containers]) {
      expect(c.securityContext, c.name).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
    }
    expect(container?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'config', mountPath: '/etc/svc', readOnly: true },
        { name: 'credential', mountPath: '/etc/svc/frontend', readOnly: true },
      ]),
    );
    expect(pod.volumes.find((v) => v.name === 'credential')?.secret).toEqual({
      secretName: 'svc-frontend-credential',
      items: [{ key: 'credential', path: 'credential' }],
    });
    expect(pod.affinity).toMatchObject({
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            podAffinityTerm: {
              topologyKey: 'kubernetes.io/hostname',
              labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'public-frontend' } },
            },
          },
        ],
      },
    });
  });

  it('writes the config file the frontend reads: frontend, oauth, tunnel limits, controller, replicas', async () => {
    const { file, dir } = await runConfigInit(objs);
    const written = parseYaml(await readFile(file, 'utf8')) as { controller: Record<string, unknown> };
    expect(written).toEqual({
      // With oauth, listen address and public URL come from the oauth section: logins to tunnelled
      // shares return to the public frontend's own host, not to the auth endpoint of in-cluster shares.
      frontend: { metrics_listen: '0.0.0.0:9090' },
      oauth: { ...oauth, endpoint_url: 'https://share.example.com', bind_address: '0.0.0.0:8080' },
      tunnel: { max_streams_per_tunnel: 64, ping_interval: '20s' },
      controller: {
        url: `http://svc-controller.${RELEASE_NS}.svc:80`,
        credential_file: '/etc/svc/frontend/credential',
      },
      replicas: { peer_listen: '0.0.0.0:8444', lease_duration: '15s' },
    });
    expect((await stat(file)).mode & 0o777).toBe(0o440);
    expect((await stat(join(dir, 'frontend'))).isDirectory()).toBe(true);

    // The product's own parser accepts the file, as `svc public-frontend` in the pod reads it: the
    // credential where the Secret is mounted, the pod's identity from the downward-API variables.
    const credentialFile = join(dir, 'credential');
    await writeFile(credentialFile, `${'c'.repeat(48)}\n`, { mode: 0o600 });
    const env = { SVC_POD_NAMESPACE: RELEASE_NS, SVC_POD_NAME: 'svc-public-frontend-7d9f-x', SVC_POD_IP: '10.1.2.3' };
    const config = parsePublicFrontendConfig(
      { ...written, controller: { ...written.controller, credential_file: credentialFile } },
      file,
      env,
    );
    expect(config.replicas).toEqual({
      namespace: RELEASE_NS,
      podName: 'svc-public-frontend-7d9f-x',
      podIp: '10.1.2.3',
      peerListen: { host: '0.0.0.0', port: 8444 },
      leaseDurationMs: 15_000,
    });
    expect(config.oauth?.endpointUrl.href).toBe('https://share.example.com/');
    expect(config.controller.url.origin).toBe(`http://svc-controller.${RELEASE_NS}.svc`);
  });

  it('refuses frontend.existingSecret alone: the public frontend needs an oauth section of its own', async () => {
    await expect(
      template(
        ...base(),
        ...publicFrontend,
        '--set',
        'frontend.existingSecret=my-oauth,auth.host=auth.share.example.com',
      ),
    ).rejects.toThrow(/set publicFrontend.oauthExistingSecret/);
  });

  it('appends the oauth: section of publicFrontend.oauthExistingSecret to the chart’s part', async () => {
    const rendered = await template(
      ...base(),
      ...publicFrontend,
      '--set',
      'frontend.existingSecret=my-oauth,auth.host=auth.share.example.com,publicFrontend.oauthExistingSecret=pf-oauth',
      '--set-json',
      'publicFrontend.providers=["google"]',
    );
    const pod = (find(rendered, 'Deployment', 'svc-public-frontend') as Obj & FrontendDeployment).spec.template.spec;
    expect(pod.volumes.find((v) => v.name === 'oauth-source')?.secret?.secretName).toBe('pf-oauth');
    const controller = find(rendered, 'ConfigMap', 'svc-controller') as Obj & { data: Record<string, string> };
    const section = (parseYaml(controller.data['controller.yaml']!) as { public_frontend: { providers: string[] } })
      .public_frontend;
    expect(section.providers).toEqual(['google']);
    const { file } = await runConfigInit(rendered, `oauth:\n  cookie_name: from-secret`);
    const config = parseYaml(await readFile(file, 'utf8')) as Record<string, unknown>;
    expect(config.oauth).toEqual({ cookie_name: 'from-secret' });
    expect(Object.keys(config).sort()).toEqual(['controller', 'frontend', 'oauth', 'replicas']);
  });

  it('tells the controller where the frontend is and mounts the shared credential', async () => {
    const config = find(objs, 'ConfigMap', 'svc-controller') as Obj & { data: Record<string, string> };
    expect((parseYaml(config.data['controller.yaml']!) as Record<string, unknown>).public_frontend).toEqual({
      domain: 'share.example.com',
      endpoint_url: 'https://share.example.com',
      credential_file: '/etc/svc/frontend/credential',
      providers: ['google'],
      // The auth endpoint's host: no tunnel share may take its token.
      reserved_hosts: ['auth.share.example.com'],
    });
    const pod = (find(objs, 'Deployment', 'svc-controller') as Obj & FrontendDeployment).spec.template.spec;
    expect(pod.containers[0]?.volumeMounts).toContainEqual({
      name: 'frontend-credential',
      mountPath: '/etc/svc/frontend',
      readOnly: true,
    });
    expect(pod.volumes.find((v) => v.name === 'frontend-credential')?.secret?.secretName).toBe(
      'svc-frontend-credential',
    );
    const credential = decode(find(objs, 'Secret', 'svc-frontend-credential'), 'credential');
    expect(credential).toMatch(/^[A-Za-z0-9]{48}$/);
    // Without the public frontend the controller config has no such section.
    const without = find(await template(...base()), 'ConfigMap', 'svc-controller') as Obj & {
      data: Record<string, string>;
    };
    expect(without.data['controller.yaml']).not.toContain('public_frontend');
  });

  it('serves both hosts through one Ingress, keeps one pod through disruptions, and grants only Leases', () => {
    const ingress = find(objs, 'Ingress', 'svc-public-frontend') as Obj & {
      spec: { rules: { host: string; http: { paths: { backend: { service: { name: string } } }[] } }[] };
    };
    expect(ingress.spec.rules.map((r) => [r.host, r.http.paths[0]?.backend.service.name])).toEqual([
      ['*.share.example.com', 'svc-public-frontend'],
      ['share.example.com', 'svc-public-frontend'],
    ]);
    const service = find(objs, 'Service', 'svc-public-frontend') as Obj & {
      spec: { ports: { name: string; port: number; targetPort: string }[] };
    };
    expect(service.spec.ports.find((p) => p.name === 'http')).toMatchObject({ port: 80, targetPort: 'http' });
    expect(service.spec.ports.map((p) => p.name)).not.toContain('peer');
    const pdb = find(objs, 'PodDisruptionBudget', 'svc-public-frontend') as Obj & {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    expect(pdb.spec.minAvailable).toBe(1);
    expect(pdb.spec.selector.matchLabels['app.kubernetes.io/component']).toBe('public-frontend');
    const role = find(objs, 'Role', 'svc-public-frontend') as Obj & { rules: unknown[] };
    expect(role.rules).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ]);
    const binding = find(objs, 'RoleBinding', 'svc-public-frontend') as Obj & { subjects: unknown[] };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'svc-public-frontend', namespace: RELEASE_NS }]);
    expect(objs.filter((o) => o.kind === 'ClusterRole' && o.metadata?.name?.includes('public-frontend'))).toEqual([]);
  });

  it('rolls the pods when the config changes', async () => {
    const checksum = (rendered: Obj[]): string | undefined =>
      (find(rendered, 'Deployment', 'svc-public-frontend') as Obj & FrontendDeployment).spec.template.metadata
        .annotations['checksum/config'];
    const before = checksum(objs);
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(checksum(await template(...base(), ...publicFrontend, '-f', oauthValues))).toBe(before);
    expect(
      checksum(
        await template(...base(), ...publicFrontend, '-f', oauthValues, '--set', 'publicFrontend.leaseDuration=30s'),
      ),
    ).not.toBe(before);
  });

  it('gives the Service a fixed node port when asked (endpointUrl can then name it), none for ClusterIP', async () => {
    const httpPort = (rendered: Obj[]) =>
      (
        find(rendered, 'Service', 'svc-public-frontend') as Obj & {
          spec: { type: string; ports: { name: string; nodePort?: number }[] };
        }
      ).spec;
    const nodePort = httpPort(
      await template(
        ...base(),
        ...publicFrontend,
        '--set',
        'publicFrontend.service.type=NodePort,publicFrontend.service.nodePort=31080',
      ),
    );
    expect(nodePort.type).toBe('NodePort');
    expect(nodePort.ports.find((p) => p.name === 'http')?.nodePort).toBe(31080);
    const clusterIp = httpPort(
      await template(...base(), ...publicFrontend, '--set', 'publicFrontend.service.nodePort=31080'),
    );
    expect(clusterIp.ports.map((p) => p.nodePort)).toEqual([undefined]);
  });

  it('leaves out the credential Secret for an existing one, and the PDB and Ingress when disabled', async () => {
    const rendered = await template(
      ...base(),
      ...publicFrontend,
      '--set',
      'publicFrontend.credential.existingSecret=cred,publicFrontend.podDisruptionBudget.enabled=false,publicFrontend.ingress.enabled=false',
    );
    const names = rendered.map((o) => `${o.kind}/${o.metadata?.name}`);
    expect(names).toContain('Deployment/svc-public-frontend');
    expect(names.filter((n) => /frontend-credential|PodDisruptionBudget|Ingress\/svc-public/.test(n))).toEqual([]);
    const pod = (find(rendered, 'Deployment', 'svc-controller') as Obj & FrontendDeployment).spec.template.spec;
    expect(pod.volumes.find((v) => v.name === 'frontend-credential')?.secret?.secretName).toBe('cred');
  });
});

describe('helm install with the public frontend', () => {
  const release = 'edge';
  const ns = 'svc-edge';
  const saUser = `system:serviceaccount:${ns}:edge-public-frontend`;
  const install = (command: 'install' | 'upgrade', ...extra: string[]): Promise<Run> =>
    helm(command, release, CHART, '-n', ns, ...base(), ...publicFrontend, ...extra, '--kubeconfig', cp.kubeconfigPath);
  const credential = async (): Promise<string> =>
    decode(
      (await rawRequest(cp.kubeConfig, `/api/v1/namespaces/${ns}/secrets/edge-frontend-credential`)) as Obj,
      'credential',
    );
  let sa: KubeConfig;
  let notes = '';

  beforeAll(async () => {
    const out = await install('install', '--create-namespace');
    if (out.code !== 0) throw new Error(`helm install failed: ${out.stderr}`);
    notes = out.stdout;
    sa = (await cp.userKubeConfig(saUser, ['system:serviceaccounts', `system:serviceaccounts:${ns}`])).kubeConfig;
  });

  it('creates the frontend’s objects', async () => {
    for (const path of [
      `/apis/apps/v1/namespaces/${ns}/deployments/edge-public-frontend`,
      `/api/v1/namespaces/${ns}/services/edge-public-frontend`,
      `/api/v1/namespaces/${ns}/serviceaccounts/edge-public-frontend`,
      `/api/v1/namespaces/${ns}/secrets/edge-public-frontend`,
      `/api/v1/namespaces/${ns}/secrets/edge-frontend-credential`,
      `/apis/policy/v1/namespaces/${ns}/poddisruptionbudgets/edge-public-frontend`,
      `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses/edge-public-frontend`,
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles/edge-public-frontend`,
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings/edge-public-frontend`,
    ]) {
      const obj = (await rawRequest(cp.kubeConfig, path)) as Obj;
      expect((obj.metadata?.labels ?? {})['app.kubernetes.io/component'], path).toBe('public-frontend');
    }
  });

  it('prints the DNS names and how a machine enables itself', () => {
    expect(notes).toContain('Point DNS for *.share.example.com and share.example.com at your ingress controller');
    expect(notes).toContain('svc enable <account token> --api-endpoint https://<controller API host>');
    expect(notes).toContain(
      'The web console: kubectl -n svc-edge port-forward svc/edge-controller 18080:80, then http://localhost:18080/console',
    );
  });

  it('lets the frontend’s ServiceAccount manage Leases in its namespace and nothing else', async () => {
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`;
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'svc-tunnel-test' },
      spec: { holderIdentity: 'edge-public-frontend-0', leaseDurationSeconds: 15 },
    };
    const created = (await rawRequest(sa, leases, { method: 'POST', body: lease })) as Obj;
    const updated = (await rawRequest(sa, `${leases}/svc-tunnel-test`, {
      method: 'PUT',
      body: { ...created, spec: { ...lease.spec, holderIdentity: 'edge-public-frontend-1' } },
    })) as Obj & { spec: { holderIdentity: string } };
    expect(updated.spec.holderIdentity).toBe('edge-public-frontend-1');
    await rawRequest(sa, `${leases}/svc-tunnel-test`, { method: 'DELETE' });
    await expect(rawRequest(sa, `/api/v1/namespaces/${ns}/secrets/edge-frontend-credential`)).rejects.toMatchObject({
      code: 403,
    });
    const can = (attrs: Record<string, string>): Promise<boolean> => selfCan(sa, attrs);
    for (const verb of ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete']) {
      expect(await can({ group: 'coordination.k8s.io', resource: 'leases', verb, namespace: ns }), verb).toBe(true);
    }
    const denied: Record<string, string>[] = [
      { group: 'coordination.k8s.io', resource: 'leases', verb: 'create', namespace: 'default' },
      { resource: 'secrets', verb: 'get', namespace: ns },
      { resource: 'secrets', verb: 'list', namespace: ns },
      { resource: 'pods', verb: 'create', namespace: ns },
      { resource: 'configmaps', verb: 'get', namespace: ns },
      { group: 'svc.dev', resource: 'shares', verb: 'list' },
    ];
    for (const attrs of denied) expect(await can(attrs), JSON.stringify(attrs)).toBe(false);
  });

  it('keeps the generated credential across helm upgrade', async () => {
    const first = await credential();
    expect(first).toMatch(/^[A-Za-z0-9]{48}$/);
    const out = await install('upgrade', '--set', 'publicFrontend.leaseDuration=20s');
    expect(out.code, out.stderr).toBe(0);
    expect(await credential()).toBe(first);
    const config = decode(
      (await rawRequest(cp.kubeConfig, `/api/v1/namespaces/${ns}/secrets/edge-public-frontend`)) as Obj,
      'public-frontend.yaml',
    );
    expect(config).toContain('lease_duration: 20s');
  });
});
