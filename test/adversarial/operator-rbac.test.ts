/**
 * What the operator's own credentials may write, on the real API server with the chart installed:
 * its RBAC (charts/svc/templates/rbac.yaml) plus the ValidatingAdmissionPolicy matched on its
 * ServiceAccount (admission-policy.yaml). Requests are made as the operator's ServiceAccount user
 * (a client certificate naming it, with its groups), so RBAC and admission see exactly the identity
 * the operator pod has. The escalations its RBAC alone would allow are refused; the objects the
 * operator itself builds for a Share and an AgentEnrollment are admitted.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { desiredAccessChildren, validateAccess } from '../../operator/access-children.ts';
import { desiredEnvironmentAgent, enrollmentSecret, type AgentEnrollment } from '../../operator/enrollment-children.ts';
import { parseInstallation } from '../../operator/frontend-secret.ts';
import { desiredShareChildren, validateShare } from '../../operator/share-children.ts';
import { desiredShareRoute } from '../../operator/share-route.ts';
import type { Access, KubeObject, Share } from '../../lib/kube/resources.ts';
import { suiteFigures } from '../support/figures.ts';
import { until } from '../support/until.ts';
import { POD_SETTINGS } from '../support/pod-settings.ts';
import { locateHelm, locateHttpRouteCrd } from '../k8s/binaries.ts';
import { CHART_OAUTH, RELEASE, RELEASE_NS, helmRunner, type HelmRunner } from '../k8s/helm-runner.ts';
import { startControlPlane, type ControlPlane } from '../k8s/envtest.ts';
import { ApiError, rawRequest, serverSideApply } from '../k8s/raw.ts';

const IMAGE = 'registry.example.com/svc:1.2.3';
const TEAM = 'team-a';
const OPERATOR_USER = `system:serviceaccount:${RELEASE_NS}:svc-operator`;
const OWNED = { 'app.kubernetes.io/managed-by': 'svc-operator' };
/** The Gateway the chart's share HTTPRoutes attach to (operator.shareHttpRoute.parentRefs). */
const GATEWAY = { name: 'public', namespace: 'gateway-system', sectionName: 'https' };
const oauth = { ...CHART_OAUTH, providers: [{ ...CHART_OAUTH.providers[0]!, name: 'dev' }] };

const figures = suiteFigures('operator-rbac');
const FIXED = "ValidatingAdmissionPolicy on the operator's ServiceAccount (admission-policy.yaml)";
const classes = {
  token: figures.attackClass('operator mints a service-account token Secret', FIXED),
  grant: figures.attackClass('operator grants or binds rights beyond the environment agent Role', FIXED),
  foreign: figures.attackClass('operator changes or deletes a Secret it does not own', FIXED),
  pod: figures.attackClass('operator runs a pod as another ServiceAccount, another image or on the host', FIXED),
  expose: figures.attackClass('operator exposes a Service, claims a non-share host or writes a Share', FIXED),
  schedule: figures.attackClass(
    'operator places a pod on control-plane nodes, above others, or with host ports, capabilities or root',
    FIXED,
  ),
  route: figures.attackClass(
    'operator routes a non-share host, through another Gateway or to another namespace',
    FIXED,
  ),
};

let cp: ControlPlane;
let work: string;
let runner: HelmRunner;
let operator: KubeConfig;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-admission-test-'));
  runner = helmRunner(locateHelm(), work);
  const values = join(work, 'values.yaml');
  const { imagePullPolicy, labels, annotations, ...scheduling } = POD_SETTINGS;
  await writeFile(
    values,
    toYaml({
      image: { repository: 'registry.example.com/svc', tag: '1.2.3' },
      frontend: { oauth },
      operator: {
        sharePods: { ...scheduling, pullPolicy: imagePullPolicy, podLabels: labels, podAnnotations: annotations },
        shareHttpRoute: { enabled: true, parentRefs: [GATEWAY], tls: 'gateway' },
      },
    }),
  );
  cp = await startControlPlane({ crds: [locateHttpRouteCrd()] });
  await runner.install(cp.kubeconfigPath, '-f', values);
  operator = (
    await cp.userKubeConfig(OPERATOR_USER, ['system:serviceaccounts', `system:serviceaccounts:${RELEASE_NS}`])
  ).kubeConfig;
  await rawRequest(cp.kubeConfig, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: TEAM } } });
  // A tenant's own Secret, and the chart's frontend Secret: neither is the operator's.
  await rawRequest(cp.kubeConfig, `/api/v1/namespaces/${TEAM}/secrets`, {
    method: 'POST',
    body: { metadata: { name: 'db-password' }, stringData: { password: 'tenant-secret' } },
  });
  // Policies take effect once the API server's policy informer has them: wait for a refusal.
  await until(
    async () => (await outcome(() => apply(operator, share('probe')))).refused,
    'the admission policy to refuse the operator a Share',
    30_000,
  );
}, 120_000);

afterAll(async () => {
  figures.write();
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

function share(name: string): KubeObject {
  return {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'Share',
    metadata: { name, namespace: TEAM },
    spec: { backendMode: 'proxy', target: 'http://app.team-a.svc:8080' },
  };
}

async function apply(kc: KubeConfig, obj: KubeObject, namespace = TEAM): Promise<KubernetesObject> {
  return await serverSideApply(kc, obj as KubernetesObject, { namespace, fieldManager: 'svc-operator' });
}

interface Outcome {
  readonly refused: boolean;
  readonly code: number;
  readonly message: string;
}

async function outcome(attempt: () => Promise<unknown>): Promise<Outcome> {
  try {
    await attempt();
    return { refused: false, code: 200, message: '' };
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { refused: true, code: err.code, message: err.message };
  }
}

const POLICY = `ValidatingAdmissionPolicy '${RELEASE}-operator-writes'`;

/**
 * One escalation attempt of an attack class: refused with 403, by the admission policy (`byPolicy`,
 * with its message) or by RBAC itself; counted as held only when every check passes.
 */
async function expectRefused(
  attack: keyof typeof classes,
  name: string,
  attempt: () => Promise<unknown>,
  expected: { byPolicy: string } | { byRbac: true },
): Promise<void> {
  await classes[attack].run(async () => {
    const result = await outcome(attempt);
    expect(result, name).toMatchObject({ refused: true, code: 403 });
    if ('byPolicy' in expected) {
      expect(result.message, name).toContain(POLICY);
      expect(result.message, name).toContain(expected.byPolicy);
    } else expect(result.message, name).not.toContain(POLICY);
  });
}

describe("the operator's credentials", () => {
  it('cannot mint a service-account token Secret in kube-system, labelled or not', async () => {
    const token = (labels: Record<string, string>): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'minted',
        namespace: 'kube-system',
        labels,
        annotations: { 'kubernetes.io/service-account.name': 'default' },
      },
      type: 'kubernetes.io/service-account-token',
    });
    await expectRefused('token', 'SA-token Secret in kube-system', () => apply(operator, token(OWNED), 'kube-system'), {
      byPolicy: 'Secrets of type Opaque only',
    });
    await expectRefused('token', 'unlabelled SA-token Secret', () => apply(operator, token({}), 'kube-system'), {
      byPolicy: 'only objects labelled app.kubernetes.io/managed-by=svc-operator',
    });
  });

  it('cannot bind cluster-admin, nor bind its own rights to anyone else', async () => {
    const binding = (roleRef: Record<string, string>, subject: Record<string, string>): KubeObject => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: roleRef.name ?? '', namespace: TEAM, labels: OWNED },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...roleRef },
      subjects: [subject],
    });
    const attacker = { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'mallory' };
    await expectRefused(
      'grant',
      'RoleBinding to cluster-admin',
      () => apply(operator, binding({ kind: 'ClusterRole', name: 'cluster-admin' }, attacker)),
      { byRbac: true },
    );
    // Its own ClusterRole: every right in it is one the operator holds, so RBAC alone would allow it.
    await expectRefused(
      'grant',
      'RoleBinding of its own ClusterRole to another user',
      () => apply(operator, binding({ kind: 'ClusterRole', name: `${RELEASE}-operator` }, attacker)),
      { byPolicy: "binds only the environment agent's Role" },
    );
    // A Role holding rights the operator has (so RBAC alone would allow granting them).
    await expectRefused(
      'grant',
      'Role granting Secrets',
      () =>
        apply(operator, {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'svc-agent-loot', namespace: TEAM, labels: OWNED },
          rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }],
        }),
      { byPolicy: 'may grant only Shares and Accesses' },
    );
    // The environment agent's own Role exists (the operator makes it); binding it to another subject
    // is what RBAC would allow, as the operator holds every right in it.
    await apply(operator, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'svc-agent-team', namespace: TEAM, labels: OWNED },
      rules: [{ apiGroups: ['svc.dev'], resources: ['shares', 'accesses'], verbs: ['get', 'create'] }],
    });
    await expectRefused(
      'grant',
      'agent Role bound to another user',
      () => apply(operator, binding({ kind: 'Role', name: 'svc-agent-team' }, attacker)),
      { byPolicy: "binds only the environment agent's Role" },
    );
    // Granting the escalate/bind verbs it does not hold is refused by RBAC before admission.
    await expectRefused(
      'grant',
      'Role granting escalate',
      () =>
        apply(operator, {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'svc-agent-esc', namespace: TEAM, labels: OWNED },
          rules: [{ apiGroups: ['rbac.authorization.k8s.io'], resources: ['roles'], verbs: ['escalate', 'bind'] }],
        }),
      { byRbac: true },
    );
  });

  it('cannot read-modify or delete a Secret it does not own', async () => {
    const relabel = (name: string, namespace: string): KubeObject => ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace, labels: OWNED },
      type: 'Opaque',
      stringData: { password: 'overwritten' },
    });
    await expectRefused('foreign', 'edit a tenant Secret', () => apply(operator, relabel('db-password', TEAM)), {
      byPolicy: 'changes and deletes only objects labelled',
    });
    await expectRefused(
      'foreign',
      "edit the chart's frontend Secret",
      () => apply(operator, relabel(`${RELEASE}-frontend`, RELEASE_NS), RELEASE_NS),
      { byPolicy: 'changes and deletes only objects labelled' },
    );
    await expectRefused(
      'foreign',
      'delete a tenant Secret',
      () => rawRequest(operator, `/api/v1/namespaces/${TEAM}/secrets/db-password`, { method: 'DELETE' }),
      { byPolicy: 'changes and deletes only objects labelled' },
    );
    const kept = (await rawRequest(cp.kubeConfig, `/api/v1/namespaces/${TEAM}/secrets/db-password`)) as {
      data: Record<string, string>;
    };
    expect(Buffer.from(kept.data.password ?? '', 'base64').toString()).toBe('tenant-secret');
  });

  it("cannot run another image or a kube-system ServiceAccount's token in a Deployment", async () => {
    const deployment = (podSpec: Record<string, unknown>): KubeObject => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'svc-share-evil', namespace: 'kube-system', labels: OWNED },
      spec: {
        selector: { matchLabels: { app: 'evil' } },
        template: { metadata: { labels: { app: 'evil' } }, spec: podSpec },
      },
    });
    await expectRefused(
      'pod',
      'Deployment as a kube-system ServiceAccount',
      () =>
        apply(
          operator,
          deployment({
            serviceAccountName: 'clusterrole-aggregation-controller',
            containers: [{ name: 'c', image: IMAGE }],
          }),
          'kube-system',
        ),
      { byPolicy: 'no ServiceAccount token unless' },
    );
    await expectRefused(
      'pod',
      'Deployment of another image',
      () =>
        apply(
          operator,
          deployment({ automountServiceAccountToken: false, containers: [{ name: 'c', image: 'evil/miner' }] }),
          'kube-system',
        ),
      { byPolicy: `runs ${IMAGE} only` },
    );
    await expectRefused(
      'pod',
      'Deployment mounting the host',
      () =>
        apply(
          operator,
          deployment({
            automountServiceAccountToken: false,
            containers: [{ name: 'c', image: IMAGE }],
            volumes: [{ name: 'root', hostPath: { path: '/' } }],
          }),
          'kube-system',
        ),
      { byPolicy: 'no host namespaces, host paths' },
    );
  });

  it('cannot expose a Service outside the cluster, claim another host, or write a Share', async () => {
    await expectRefused(
      'expose',
      'LoadBalancer Service',
      () =>
        apply(operator, {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'svc-share-lb', namespace: TEAM, labels: OWNED },
          spec: { type: 'LoadBalancer', selector: { a: 'b' }, ports: [{ port: 80 }] },
        }),
      { byPolicy: 'ClusterIP Services without external IPs only' },
    );
    await expectRefused(
      'expose',
      'Ingress for the auth host',
      () =>
        apply(operator, {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          metadata: { name: 'svc-share-auth', namespace: TEAM, labels: OWNED },
          spec: {
            rules: [
              {
                host: 'auth.share.example.com.evil.io',
                http: {
                  paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'x', port: { number: 80 } } } }],
                },
              },
            ],
          },
        }),
      { byPolicy: 'serves share hosts (*.share.example.com) only' },
    );
    await expectRefused(
      'expose',
      'Ingress for every share host',
      () =>
        apply(operator, {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          metadata: { name: 'svc-share-all', namespace: TEAM, labels: OWNED },
          spec: {
            rules: [
              {
                host: '*.share.example.com',
                http: {
                  paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'x', port: { number: 80 } } } }],
                },
              },
            ],
          },
        }),
      { byPolicy: 'serves share hosts (*.share.example.com) only' },
    );
    await expectRefused(
      'expose',
      "Ingress for the auth endpoint's own host under the share domain",
      () =>
        apply(operator, {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'Ingress',
          metadata: { name: 'svc-share-takes-auth', namespace: TEAM, labels: OWNED },
          spec: {
            rules: [
              {
                host: 'auth.share.example.com',
                http: {
                  paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'x', port: { number: 80 } } } }],
                },
              },
            ],
          },
        }),
      { byPolicy: "never the installation's own hosts" },
    );
    await expectRefused('expose', 'create a Share', () => apply(operator, share('exposed')), {
      byPolicy: 'never writes Shares or Accesses',
    });
  });

  it("admits the children the operator builds for a Share, an Access and an AgentEnrollment's environment agent, with the share pod settings", async () => {
    await rawRequest(cp.kubeConfig, '/apis/scheduling.k8s.io/v1/priorityclasses', {
      method: 'POST',
      body: { metadata: { name: 'tenant-low' }, value: 100 },
    });
    const owner = (await serverSideApply(cp.kubeConfig, {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Share',
      metadata: { name: 'docs', namespace: TEAM },
      spec: { backendMode: 'proxy', target: 'http://docs.team-a.svc', token: 'docs1', oauth: { provider: 'dev' } },
    } as KubernetesObject)) as Share;
    const installation = parseInstallation({
      'oauth.yaml': Buffer.from(toYaml({ oauth: { ...oauth, bind_address: '0.0.0.0:8080' } })).toString('base64'),
    });
    if (!installation.ok) throw new Error(`test oauth section invalid: ${JSON.stringify(installation.problems)}`);
    const valid = validateShare(owner, installation.value);
    if (!valid.ok) throw new Error('test Share invalid');
    const children = desiredShareChildren(owner, valid.value, {
      image: IMAGE,
      domain: 'share.example.com',
      ingress: { annotations: {}, tls: { mode: 'perHost' } },
      installation: installation.value,
      pods: POD_SETTINGS,
    });
    for (const child of [children.secret, children.deployment, children.service, children.ingress]) {
      if (child) await apply(operator, child);
    }
    const accessOwner = (await serverSideApply(cp.kubeConfig, {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Access',
      metadata: { name: 'db', namespace: TEAM },
      spec: { shareToken: 'docs1', bindPort: 15432 },
    } as KubernetesObject)) as Access;
    const access = validateAccess(accessOwner);
    if (!access.ok) throw new Error('test Access invalid');
    const accessChildren = desiredAccessChildren(accessOwner, access.value, owner, IMAGE, POD_SETTINGS);
    for (const child of [accessChildren.deployment, accessChildren.service]) await apply(operator, child);
    const enrollment = (await serverSideApply(cp.kubeConfig, {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'AgentEnrollment',
      metadata: { name: 'team', namespace: TEAM },
      spec: { controllerUrl: 'http://controller.example', accountTokenSecretRef: { name: 'account', key: 'token' } },
    } as KubernetesObject)) as AgentEnrollment;
    const file = {
      version: 1 as const,
      apiEndpoint: 'http://controller.example',
      envZId: 'env1',
      enrollmentId: 'enr1',
      token: 'svce_enrollment-token',
      controller: { zId: 'ctl', publicKey: 'pk' },
      enrolledAt: new Date().toISOString(),
    };
    const agent = desiredEnvironmentAgent(enrollment, file, IMAGE, POD_SETTINGS);
    await apply(
      operator,
      enrollmentSecret(enrollment, { controllerUrl: file.apiEndpoint, envZId: 'env1', enrollment: file }),
    );
    for (const child of [agent.serviceAccount, agent.role, agent.roleBinding, agent.deployment])
      await apply(operator, child);
    // The unenroll finalizer (the one write to an AgentEnrollment), and deleting what it owns.
    await rawRequest(operator, `/apis/svc.dev/v1alpha1/namespaces/${TEAM}/agentenrollments/team`, {
      method: 'PATCH',
      contentType: 'application/merge-patch+json',
      body: { metadata: { finalizers: ['svc.dev/unenroll'] } },
    });
    await rawRequest(operator, `/apis/networking.k8s.io/v1/namespaces/${TEAM}/ingresses/svc-share-docs`, {
      method: 'DELETE',
    });
    await expectRefused(
      'grant',
      "change an AgentEnrollment's spec",
      () =>
        rawRequest(operator, `/apis/svc.dev/v1alpha1/namespaces/${TEAM}/agentenrollments/team`, {
          method: 'PATCH',
          contentType: 'application/merge-patch+json',
          body: { spec: { controllerUrl: 'http://evil.example' } },
        }),
      { byPolicy: 'changes only the finalizers of an AgentEnrollment' },
    );
  });
});

/** A share's Deployment as the operator builds it with the chart's pod settings, under another name. */
function shareDeployment(name: string): KubeObject {
  const owner: Share = {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'Share',
    metadata: { name, namespace: TEAM, uid: '9f1c2c3e-0000-4000-8000-000000000001' },
    spec: { backendMode: 'proxy', target: 'http://app.team-a.svc:8080', token: name },
  };
  const valid = validateShare(owner, undefined);
  if (!valid.ok) throw new Error('test Share invalid');
  return desiredShareChildren(owner, valid.value, { image: IMAGE, domain: 'share.example.com', pods: POD_SETTINGS })
    .deployment;
}

type PodSpec = Record<string, unknown> & { containers: Record<string, unknown>[]; securityContext: object };

/** `deployment` with its pod spec changed by `change` (a copy; the original stays as built). */
function withPod(deployment: KubeObject, change: (pod: PodSpec) => void): KubeObject {
  const copy = structuredClone(deployment) as KubeObject & { spec: { template: { spec: PodSpec } } };
  change(copy.spec.template.spec);
  return copy;
}

/** A share HTTPRoute as the operator builds it for the chart's Gateway, then changed by `change`. */
function shareRoute(name: string, change: (spec: Record<string, unknown>) => void = () => {}): KubeObject {
  const route = desiredShareRoute(
    { name, namespace: TEAM, labels: OWNED },
    `${name}.share.example.com`,
    `svc-share-${name}`,
    { parentRefs: [GATEWAY], annotations: {}, tls: 'gateway' },
  );
  change(route.spec as Record<string, unknown>);
  return route;
}

describe("the operator's credentials and share pod scheduling", () => {
  const SCHEDULED = 'scheduled only as operator.sharePods sets';
  const CONTAINED = 'run as non-root, and its containers use no hostPort';
  const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';

  it('admit the share Deployment with the configured settings, and refuse each scheduling escalation', async () => {
    await rawRequest(cp.kubeConfig, '/apis/scheduling.k8s.io/v1/priorityclasses', {
      method: 'POST',
      body: { metadata: { name: 'tenant-low' }, value: 100 },
    }).catch((err: unknown) => {
      if (!(err instanceof ApiError && err.code === 409)) throw err;
    });
    const base = shareDeployment('sched');
    await apply(operator, base);
    const attempts: [string, (pod: PodSpec) => void, string][] = [
      [
        'toleration of the control-plane taint',
        (pod) => {
          pod.tolerations = [
            ...POD_SETTINGS.tolerations,
            { key: CONTROL_PLANE, operator: 'Exists', effect: 'NoSchedule' },
          ];
        },
        SCHEDULED,
      ],
      [
        'nodeSelector of control-plane nodes',
        (pod) => {
          pod.nodeSelector = { [CONTROL_PLANE]: '' };
        },
        SCHEDULED,
      ],
      [
        'affinity to control-plane nodes',
        (pod) => {
          pod.affinity = {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: CONTROL_PLANE, operator: 'Exists' }] }],
              },
            },
          };
        },
        SCHEDULED,
      ],
      [
        'affinity removed (any node)',
        (pod) => {
          delete pod.affinity;
        },
        SCHEDULED,
      ],
      [
        'system-cluster-critical priority',
        (pod) => {
          pod.priorityClassName = 'system-cluster-critical';
        },
        SCHEDULED,
      ],
      [
        'nodeName of a control-plane node',
        (pod) => {
          pod.nodeName = 'control-plane-1';
        },
        SCHEDULED,
      ],
      [
        'topology spread',
        (pod) => {
          pod.topologySpreadConstraints = [
            { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule' },
          ];
        },
        SCHEDULED,
      ],
      [
        'hostPort',
        (pod) => {
          pod.containers[0]!.ports = [{ name: 'http', containerPort: 9000, hostPort: 80, protocol: 'TCP' }];
        },
        CONTAINED,
      ],
      [
        'added capability NET_ADMIN',
        (pod) => {
          const context = pod.containers[0]!.securityContext as Record<string, unknown>;
          pod.containers[0]!.securityContext = { ...context, capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } };
        },
        CONTAINED,
      ],
      [
        'root pod',
        (pod) => {
          pod.securityContext = { ...pod.securityContext, runAsNonRoot: false };
        },
        CONTAINED,
      ],
      [
        'privilege escalation',
        (pod) => {
          const context = pod.containers[0]!.securityContext as Record<string, unknown>;
          pod.containers[0]!.securityContext = { ...context, allowPrivilegeEscalation: true };
        },
        CONTAINED,
      ],
    ];
    for (const [name, change, message] of attempts)
      await expectRefused('schedule', name, () => apply(operator, withPod(base, change)), { byPolicy: message });
    const live = (await rawRequest(cp.kubeConfig, `/apis/apps/v1/namespaces/${TEAM}/deployments/svc-share-sched`)) as {
      spec: { template: { spec: Record<string, unknown> } };
    };
    expect(live.spec.template.spec).toMatchObject({
      nodeSelector: POD_SETTINGS.nodeSelector,
      tolerations: POD_SETTINGS.tolerations,
      priorityClassName: POD_SETTINGS.priorityClassName,
    });
    expect(live.spec.template.spec.nodeName).toBeUndefined();
  });

  it("admit the share HTTPRoute for the chart's Gateway, and refuse other hosts, Gateways and backends", async () => {
    await apply(operator, shareRoute('routed'));
    const attempts: [string, (spec: Record<string, unknown>) => void][] = [
      ['the auth host', (spec) => void (spec.hostnames = ['auth.share.example.com.evil.io'])],
      [
        "the auth endpoint's own host under the share domain",
        (spec) => void (spec.hostnames = ['auth.share.example.com']),
      ],
      ['every share host at once', (spec) => void (spec.hostnames = ['*.share.example.com'])],
      ['a second host', (spec) => void (spec.hostnames = ['a.share.example.com', 'b.share.example.com'])],
      ['another Gateway', (spec) => void (spec.parentRefs = [{ name: 'internal', namespace: 'gateway-system' }])],
      ['another listener', (spec) => void (spec.parentRefs = [{ ...GATEWAY, sectionName: 'admin' }])],
      [
        'a Service in kube-system',
        (spec) => void (spec.rules = [{ backendRefs: [{ name: 'kube-dns', namespace: 'kube-system', port: 53 }] }]),
      ],
      [
        'a header filter forging an identity',
        (spec) =>
          void (spec.rules = [
            {
              filters: [
                {
                  type: 'RequestHeaderModifier',
                  requestHeaderModifier: { set: [{ name: 'X-Forwarded-Email', value: 'admin@example.com' }] },
                },
              ],
              backendRefs: [{ name: 'svc-share-routed', port: 80 }],
            },
          ]),
      ],
    ];
    for (const [name, change] of attempts)
      await expectRefused(
        'route',
        name,
        () => apply(operator, shareRoute(`bad-${attempts.findIndex((a) => a[0] === name)}`, change)),
        {
          byPolicy: 'an operator HTTPRoute serves one share host (*.share.example.com) only',
        },
      );
    await rawRequest(operator, `/apis/gateway.networking.k8s.io/v1/namespaces/${TEAM}/httproutes/routed`, {
      method: 'DELETE',
    });
  });
});
