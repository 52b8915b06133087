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
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { locateHelm } from './binaries.ts';
import {
  CHART,
  RELEASE,
  RELEASE_NS,
  findObject,
  helmRunner,
  run,
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
  });

  it('passes a server-side dry run', async () => {
    await serverSideApply(cp.kubeConfig, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: RELEASE_NS } });
    const objs = await template(
      ...base(),
      '--set',
      'controller.ingress.enabled=true,controller.ingress.host=api.example.com',
      '--include-crds',
    );
    for (const obj of objs) {
      const applied = await serverSideApply(cp.kubeConfig, obj, { dryRun: true, namespace: RELEASE_NS });
      expect(applied.kind).toBe(obj.kind);
    }
    expect(objs.map((o) => `${o.kind}/${o.metadata?.name}`)).toContain('Ingress/svc-controller');
  });
});

describe('helm install with the controller', () => {
  const saUser = `system:serviceaccount:${RELEASE_NS}:svc-controller`;
  let sa: { kubeconfigPath: string; kubeConfig: KubeConfig };

  beforeAll(async () => {
    const out = await helm(
      'install',
      RELEASE,
      CHART,
      '-n',
      RELEASE_NS,
      '--create-namespace',
      ...base(),
      '--kubeconfig',
      cp.kubeconfigPath,
    );
    if (out.code !== 0) throw new Error(`helm install failed: ${out.stderr}`);
    sa = await cp.userKubeConfig(saUser, ['system:serviceaccounts', `system:serviceaccounts:${RELEASE_NS}`]);
  });

  it('grants the controller Secrets in its namespace and nothing more', async () => {
    const can = async (attrs: Record<string, string>): Promise<boolean> =>
      (
        (await rawRequest(sa.kubeConfig, '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
          method: 'POST',
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: attrs },
          },
        })) as { status: { allowed: boolean } }
      ).status.allowed;
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
