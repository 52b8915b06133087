/**
 * The chart as a platform review reads it, rendered with the real helm binary (no cluster):
 * annotation values passed whole, metrics never on a public Service, no disruption budget that
 * blocks drains, a leader-election Lease per release, share TLS and the unenroll deadline plumbed
 * to the operator, RBAC without bind/escalate matching docs/kubernetes.md, the operator's admission
 * policy, the share pod settings passed to the operator, the pod extras of the chart's own
 * Deployments, ServiceMonitors, the share pod NetworkPolicy, Gateway API HTTPRoutes, the console's
 * OAuth Secret merged by an init container (never into the ConfigMap), and `helm lint --strict` of
 * the values these add.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments, stringify as toYaml } from 'yaml';
import { readConsoleConfig, type ConsoleConfig } from '../../controller/console/config.ts';
import { ConfigReader } from '../../lib/config-reader.ts';
import { locateHelm } from './binaries.ts';
import {
  CHART,
  CHART_OAUTH,
  KUBE_VERSION,
  RELEASE_NS,
  findObject,
  helmRunner,
  type HelmRunner,
  type Obj,
} from './helm-runner.ts';
import type { Share } from '../../lib/kube/resources.ts';
import { desiredShareChildren, validateShare } from '../../operator/share-children.ts';
import type { Problem } from '../../lib/errors.ts';
import { parsePodSettings } from '../../operator/pod-settings.ts';
import { parseShareRoute } from '../../operator/share-route.ts';

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'kubernetes.md');

let work: string;
let runner: HelmRunner;
let identity: string;

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs: string[];
}
type Service = Obj & { spec: { type?: string; ports: { name: string; port: number }[] } };

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-chart-render-'));
  runner = helmRunner(locateHelm(), work);
  identity = join(work, 'identity.json');
  await writeFile(identity, JSON.stringify({ zId: 'zctl0000' }));
});
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

const domain = ['--set', 'shareDomain=share.example.com'];
const publicFrontend = (): string[] => [
  ...domain,
  '--set',
  'controller.enabled=true,publicFrontend.enabled=true,publicFrontend.endpointUrl=https://share.example.com',
  '--set-file',
  `controller.identity.json=${identity}`,
];

/** `helm template` as another release name (the runner's template() fixes `svc`). */
async function templateAs(release: string, ...args: string[]): Promise<Obj[]> {
  const out = await runner.helm('template', release, CHART, '-n', RELEASE_NS, '--kube-version', KUBE_VERSION, ...args);
  if (out.code !== 0) throw new Error(`helm template failed: ${out.stderr}`);
  return parseAllDocuments(out.stdout)
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);
}

function operatorArgs(objs: Obj[], release = 'svc'): string[] {
  const deployment = findObject(objs, 'Deployment', `${release}-operator`) as Obj & {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  return deployment.spec.template.spec.containers[0]!.args;
}

async function valuesFile(name: string, values: unknown): Promise<string> {
  const path = join(work, name);
  await writeFile(path, toYaml(values));
  return path;
}

describe('share Ingress annotations', () => {
  it('reach the operator whole, even with ": " and " #" in a value', async () => {
    const values = await valuesFile('annotations.yaml', {
      operator: {
        shareIngress: {
          annotations: {
            'nginx.ingress.kubernetes.io/configuration-snippet': 'more_set_headers "X-Frame: DENY"; # keep',
            'example.com/plain': 'on-demand',
          },
        },
      },
    });
    const args = operatorArgs(await runner.template(...domain, '-f', values));
    expect(args).toContain(
      '--ingress-annotation=nginx.ingress.kubernetes.io/configuration-snippet=more_set_headers "X-Frame: DENY"; # keep',
    );
    expect(args).toContain('--ingress-annotation=example.com/plain=on-demand');
  });
});

describe('the public frontend', () => {
  it('serves /metrics on a ClusterIP Service of its own, never on the visitor Service', async () => {
    for (const type of ['ClusterIP', 'LoadBalancer', 'NodePort']) {
      const objs = await runner.template(...publicFrontend(), '--set', `publicFrontend.service.type=${type}`);
      const visitors = findObject(objs, 'Service', 'svc-public-frontend') as Service;
      expect(visitors.spec.type).toBe(type);
      expect(visitors.spec.ports.map((p) => p.name)).toEqual(['http']);
      const metrics = findObject(objs, 'Service', 'svc-public-frontend-metrics') as Service;
      expect(metrics.spec.type).toBe('ClusterIP');
      expect(metrics.spec.ports).toMatchObject([{ name: 'metrics', port: 9090 }]);
    }
  });

  it('has a PodDisruptionBudget only with two or more replicas', async () => {
    const pdbs = async (replicas: number): Promise<Obj[]> =>
      (await runner.template(...publicFrontend(), '--set', `publicFrontend.replicas=${replicas}`)).filter(
        (o) => o.kind === 'PodDisruptionBudget',
      );
    expect(await pdbs(1)).toEqual([]);
    expect(await pdbs(2)).toMatchObject([{ metadata: { name: 'svc-public-frontend' }, spec: { minAvailable: 1 } }]);
  });

  it('renders a new credential on every helm template unless an existing Secret is named', async () => {
    const credential = async (...args: string[]): Promise<string | undefined> => {
      const objs = await runner.template(...publicFrontend(), ...args);
      const secret = objs.find((o) => o.kind === 'Secret' && o.metadata?.name === 'svc-frontend-credential') as
        (Obj & { data: { credential: string } }) | undefined;
      return secret?.data.credential;
    };
    const [a, b] = [await credential(), await credential()];
    expect(a).toBeTruthy();
    expect(a).not.toBe(b);
    const existing = ['--set', 'publicFrontend.credential.existingSecret=gitops-credential'];
    expect(await credential(...existing)).toBeUndefined();
    const objs = await runner.template(...publicFrontend(), ...existing);
    const mounted = JSON.stringify(findObject(objs, 'Deployment', 'svc-public-frontend'));
    expect(mounted).toContain('"secretName":"gitops-credential"');
  });
});

describe('the operator', () => {
  it('elects its leader on a Lease named after the release, which only it may update', async () => {
    for (const release of ['svc', 'edge']) {
      const objs = await templateAs(release, ...domain);
      expect(operatorArgs(objs, release)).toContain(`--lease-name=${release}-operator`);
      const role = findObject(objs, 'Role', `${release}-operator-installation`) as Obj & { rules: Rule[] };
      expect(role.rules.find((r) => r.resourceNames)).toMatchObject({
        resources: ['leases'],
        resourceNames: [`${release}-operator`],
      });
    }
  });

  it('gets the share TLS mode and the unenroll deadline from values', async () => {
    const args = async (...set: string[]): Promise<string[]> =>
      operatorArgs(await runner.template(...domain, ...set)).filter(
        (a) => a.startsWith('--ingress-tls') || a.startsWith('--unenroll-deadline'),
      );
    expect(await args()).toEqual(['--unenroll-deadline=10m', '--ingress-tls=none']);
    expect(await args('--set', 'operator.shareIngress.tls.mode=perHost')).toContain('--ingress-tls=per-host');
    expect(await args('--set', 'operator.shareIngress.tls.mode=defaultCertificate')).toContain(
      '--ingress-tls=default-certificate',
    );
    expect(
      await args('--set', 'operator.shareIngress.tls.mode=secret,operator.shareIngress.tls.secretName=share-wild'),
    ).toContain('--ingress-tls=secret:share-wild');
    expect(await args('--set', 'operator.unenrollDeadlineMinutes=3')).toContain('--unenroll-deadline=3m');
  });

  it('gets the auth share quota from values, and reserves the installation’s own hosts under the share domain', async () => {
    const values = await valuesFile('reserved.yaml', {
      frontend: { oauth: CHART_OAUTH },
      controller: { ingress: { enabled: true, host: 'api.example.com' } },
      operator: { authShareQuotaBytes: 65536 },
    });
    const tunnel = ['--set', 'publicFrontend.endpointUrl=https://tunnel.share.example.com'];
    const objs = await runner.template(...publicFrontend(), ...tunnel, '-f', values);
    const args = operatorArgs(objs).filter((a) => a.startsWith('--auth-share') || a.startsWith('--reserved-host'));
    // api.example.com is outside the share domain: no share host can be it.
    expect(args).toEqual([
      '--auth-share-quota=65536',
      '--reserved-host=auth.share.example.com',
      '--reserved-host=tunnel.share.example.com',
    ]);
    const policy = JSON.stringify(findObject(objs, 'ValidatingAdmissionPolicy', 'svc-operator-writes'));
    expect(policy).toContain("!(r.host in ['auth.share.example.com', 'tunnel.share.example.com'])");
  });

  it.each([
    ['a TLS mode it does not know', 'operator.shareIngress.tls.mode=wildcard', "at '/operator/shareIngress/tls/mode'"],
    [
      'mode secret without its Secret',
      'operator.shareIngress.tls.mode=secret',
      "at '/operator/shareIngress/tls/secretName'",
    ],
    ['an unenroll deadline of 0', 'operator.unenrollDeadlineMinutes=0', "at '/operator/unenrollDeadlineMinutes'"],
    [
      'an auth share quota below one large share',
      'operator.authShareQuotaBytes=1000',
      "at '/operator/authShareQuotaBytes'",
    ],
  ])('refuses %s', async (_name, set, message) => {
    const out = await runner.helm('template', 'svc', CHART, ...domain, '--set', set);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });

  it('holds no bind, escalate, impersonate or wildcard right, and its rules are the documented ones', async () => {
    const objs = await runner.template(...domain);
    const roles = objs.filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role');
    for (const role of roles) {
      for (const rule of (role as Obj & { rules: Rule[] }).rules) {
        expect(rule.verbs.filter((v) => ['bind', 'escalate', 'impersonate', '*'].includes(v))).toEqual([]);
        expect([...(rule.resources ?? []), ...(rule.apiGroups ?? [])]).not.toContain('*');
      }
    }
    const row = (scope: string, rule: Rule): string =>
      [
        scope,
        (rule.apiGroups ?? []).map((g) => g || 'core').join(', '),
        (rule.resources ?? []).join(', '),
        (rule.resourceNames ?? []).map((n) => n.replace(/^svc-/, '<release>-')).join(', '),
        rule.verbs.join(', '),
      ].join(' | ');
    const rendered = [
      ...(findObject(objs, 'ClusterRole', 'svc-operator') as Obj & { rules: Rule[] }).rules.map((r) =>
        row('watched', r),
      ),
      ...(findObject(objs, 'Role', 'svc-operator-installation') as Obj & { rules: Rule[] }).rules.map((r) =>
        row('release', r),
      ),
    ];
    const doc = readFileSync(DOC, 'utf8');
    const table = doc.slice(doc.indexOf('<!-- operator-rbac:begin -->'), doc.indexOf('<!-- operator-rbac:end -->'));
    const documented = table
      .split('\n')
      .filter((l) => l.startsWith('| ') && !l.startsWith('| Scope') && !l.startsWith('| ---'))
      .map((l) =>
        l
          .split('|')
          .slice(1, -1)
          .map((c) => c.trim().replaceAll('`', '')),
      )
      .map(([scope = '', ...rest]) => [scope.startsWith('watched') ? 'watched' : 'release', ...rest].join(' | '));
    expect(documented).toEqual(rendered);
  });

  it('renders an admission policy matched on its ServiceAccount, with the share domain and image', async () => {
    const objs = await runner.template(...domain, '--set', 'image.repository=registry.example.com/svc,image.tag=v9');
    const policy = findObject(objs, 'ValidatingAdmissionPolicy', 'svc-operator-writes') as Obj & {
      spec: { failurePolicy: string; matchConditions: { expression: string }[]; validations: { expression: string }[] };
    };
    expect(policy.spec.failurePolicy).toBe('Fail');
    expect(policy.spec.matchConditions).toEqual([
      {
        name: 'operator',
        expression: `request.userInfo.username == 'system:serviceaccount:${RELEASE_NS}:svc-operator'`,
      },
    ]);
    const all = policy.spec.validations.map((v) => v.expression).join('\n');
    expect(all).toContain("r.host.endsWith('.share.example.com')");
    expect(all).toContain("c.image == 'registry.example.com/svc:v9'");
    // Without operator.sharePods scheduling values, share pods may set none of them.
    for (const field of ['nodeSelector', 'tolerations', 'affinity', 'priorityClassName', 'nodeName'])
      expect(all).toContain(`!has(variables.pod.${field})`);
    const pinned = await runner.template(
      ...domain,
      '--set',
      'operator.sharePods.tolerations[0].key=dedicated,operator.sharePods.tolerations[0].tolerationSeconds=30',
    );
    const pinnedPolicy = findObject(pinned, 'ValidatingAdmissionPolicy', 'svc-operator-writes') as Obj & {
      spec: { validations: { expression: string }[] };
    };
    expect(pinnedPolicy.spec.validations.map((v) => v.expression).join('\n')).toContain(
      'dyn(variables.pod.tolerations) == [dyn({"key": dyn("dedicated"), "tolerationSeconds": dyn(30)})]',
    );
    expect(findObject(objs, 'ValidatingAdmissionPolicyBinding', 'svc-operator-writes')).toMatchObject({
      spec: { policyName: 'svc-operator-writes', validationActions: ['Deny'] },
    });
  });

  it('passes helm lint --strict with share TLS, the public frontend and one replica', async () => {
    const out = await runner.helm(
      'lint',
      CHART,
      '--strict',
      ...publicFrontend(),
      '--set',
      'operator.shareIngress.tls.mode=perHost,publicFrontend.replicas=1',
    );
    expect(out.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(out.code).toBe(0);
  });
});

describe('share pod settings (operator.sharePods)', () => {
  /** The operator's --pod-settings as the operator itself parses it. */
  const podSettings = (objs: Obj[]): { settings: unknown; problems: Problem[] } => {
    const arg = operatorArgs(objs).find((a) => a.startsWith('--pod-settings=')) ?? '';
    const problems: Problem[] = [];
    return { settings: parsePodSettings(arg.slice('--pod-settings='.length), problems), problems };
  };

  it('default to the chart image pull policy and pull secrets', async () => {
    expect(podSettings(await runner.template(...domain))).toEqual({
      settings: { imagePullPolicy: 'IfNotPresent' },
      problems: [],
    });
    const objs = await runner.template(
      ...domain,
      '--set',
      'imagePullSecrets[0].name=chart-creds,image.pullPolicy=Always',
    );
    expect(podSettings(objs).settings).toEqual({
      imagePullPolicy: 'Always',
      imagePullSecrets: [{ name: 'chart-creds' }],
    });
  });

  it('reach the operator whole and valid', async () => {
    const sharePods = {
      imagePullSecrets: [{ name: 'registry-creds' }],
      pullPolicy: 'Always',
      resources: { requests: { cpu: '25m', memory: '96Mi' }, limits: { memory: '300Mi' } },
      nodeSelector: { pool: 'shares' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'shares: "x" # y', effect: 'NoSchedule' }],
      affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } },
      priorityClassName: 'tenant-low',
      podLabels: { team: 'platform' },
      podAnnotations: { 'example.com/note': 'a: b # c' },
    };
    const values = await valuesFile('share-pods.yaml', { operator: { sharePods } });
    const { pullPolicy, podLabels, podAnnotations, ...same } = sharePods;
    expect(podSettings(await runner.template(...domain, '-f', values))).toEqual({
      settings: { ...same, imagePullPolicy: pullPolicy, labels: podLabels, annotations: podAnnotations },
      problems: [],
    });
  });

  it.each([
    ['an unknown setting', 'operator.sharePods.hostNetwork=true', "at '/operator/sharePods'"],
    [
      'a pull policy it does not know',
      'operator.sharePods.pullPolicy=Sometimes',
      "at '/operator/sharePods/pullPolicy'",
    ],
    [
      'a label the operator sets',
      'operator.sharePods.podLabels.svc\\.dev/share=x',
      "at '/operator/sharePods/podLabels'",
    ],
    [
      'a bad priority class name',
      'operator.sharePods.priorityClassName=Low_Prio',
      "at '/operator/sharePods/priorityClassName'",
    ],
  ])('refuses %s', async (_name, set, message) => {
    const out = await runner.helm('template', 'svc', CHART, ...domain, '--set', set);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});

type PodSpec = {
  metadata: { labels: Record<string, string> };
  spec: Record<string, unknown> & {
    containers: { name: string; env?: { name: string }[]; volumeMounts: { name: string; mountPath: string }[] }[];
    volumes: { name: string }[];
  };
};
const podOf = (objs: Obj[], name: string): PodSpec =>
  (findObject(objs, 'Deployment', name) as Obj & { spec: { template: PodSpec } }).spec.template;

/** Every optional part of the chart on: OAuth, the controller and the public frontend. */
async function everything(name: string, extra: Record<string, unknown> = {}): Promise<string[]> {
  const values = await valuesFile(name, { frontend: { oauth: CHART_OAUTH }, ...extra });
  return [...publicFrontend(), '-f', values];
}

describe("the chart's own Deployments", () => {
  const components = {
    operator: ['svc-operator', 'operator'],
    auth: ['svc-auth', 'frontend'],
    controller: ['svc-controller', 'controller'],
    publicFrontend: ['svc-public-frontend', 'public-frontend'],
  } as const;

  it('take pod labels, priority class, topology spread and extra env, volumes and mounts', async () => {
    const extras = (component: string): Record<string, unknown> => ({
      podLabels: { team: 'platform', 'example.com/component-copy': component },
      priorityClassName: 'platform-high',
      topologySpreadConstraints: [
        {
          maxSkew: 1,
          topologyKey: 'topology.kubernetes.io/zone',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: { matchLabels: { team: 'platform' } },
        },
      ],
      extraEnv: [{ name: 'HTTPS_PROXY', value: 'http://proxy.corp:3128' }],
      extraVolumes: [{ name: 'corp-ca', configMap: { name: 'corp-ca' } }],
      extraVolumeMounts: [{ name: 'corp-ca', mountPath: '/etc/ssl/corp', readOnly: true }],
    });
    const values = Object.fromEntries(Object.keys(components).map((c) => [c, extras(c)]));
    const objs = await runner.template(...(await everything('pod-extras.yaml', values)));
    for (const [component, [deployment, container]] of Object.entries(components)) {
      const pod = podOf(objs, deployment);
      expect(pod.metadata.labels, component).toMatchObject({
        team: 'platform',
        'example.com/component-copy': component,
        'app.kubernetes.io/instance': 'svc',
      });
      expect(pod.spec, component).toMatchObject({
        priorityClassName: 'platform-high',
        topologySpreadConstraints: [{ topologyKey: 'topology.kubernetes.io/zone' }],
      });
      const main = pod.spec.containers.find((c) => c.name === container);
      expect(
        main?.env?.map((e) => e.name),
        component,
      ).toContain('HTTPS_PROXY');
      expect(main?.volumeMounts, component).toContainEqual({
        name: 'corp-ca',
        mountPath: '/etc/ssl/corp',
        readOnly: true,
      });
      // The chart's own mounts and volumes stay.
      expect(
        main?.volumeMounts.map((m) => m.mountPath),
        component,
      ).toContain('/tmp');
      expect(
        pod.spec.volumes.map((v) => v.name),
        component,
      ).toEqual(expect.arrayContaining(['corp-ca', 'tmp']));
    }
    // The public frontend keeps the env it needs besides the extra.
    const frontend = podOf(objs, 'svc-public-frontend').spec.containers[0];
    expect(frontend?.env?.map((e) => e.name)).toEqual(expect.arrayContaining(['SVC_POD_NAME', 'HTTPS_PROXY']));
    const plain = podOf(await runner.template(...domain), 'svc-operator');
    expect(plain.spec.priorityClassName).toBeUndefined();
    expect(plain.spec.containers[0]?.env).toBeUndefined();
  });

  it.each([
    [
      'a pod label that is a selector label',
      'auth.podLabels.app\\.kubernetes\\.io/component=x',
      "at '/auth/podLabels'",
    ],
    ['a volume mount without a path', 'controller.extraVolumeMounts[0].name=x', "at '/controller/extraVolumeMounts/0'"],
    ['an env variable without a name', 'operator.extraEnv[0].value=x', "at '/operator/extraEnv/0'"],
    [
      'a topology spread without its key',
      'publicFrontend.topologySpreadConstraints[0].maxSkew=1',
      "at '/publicFrontend/topologySpreadConstraints/0'",
    ],
  ])('refuses %s', async (_name, set, message) => {
    const out = await runner.helm('template', 'svc', CHART, ...domain, '--set', set);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});

describe('ServiceMonitors', () => {
  it('are off by default, and on select each metrics Service by its port named metrics', async () => {
    const args = await everything('monitors.yaml');
    expect((await runner.template(...args)).filter((o) => o.kind === 'ServiceMonitor')).toEqual([]);
    const objs = await runner.template(
      ...args,
      '--set',
      'serviceMonitor.enabled=true,serviceMonitor.labels.release=kube-prometheus-stack',
    );
    type Monitor = Obj & {
      metadata: { labels: Record<string, string> };
      spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string }[] };
    };
    const monitors = objs.filter((o) => o.kind === 'ServiceMonitor') as Monitor[];
    expect(monitors.map((m) => m.metadata.name)).toEqual(['svc-operator', 'svc-auth', 'svc-public-frontend']);
    for (const monitor of monitors) {
      expect(monitor.metadata.labels.release).toBe('kube-prometheus-stack');
      const selected = objs.filter(
        (o) =>
          o.kind === 'Service' &&
          Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata?.labels?.[k] === v),
      ) as Service[];
      const scraped = selected.filter((svc) => svc.spec.ports.some((p) => p.name === monitor.spec.endpoints[0]?.port));
      expect(scraped.length, monitor.metadata.name).toBeGreaterThan(0);
      // Never the public frontend's visitor Service, which may be a LoadBalancer.
      for (const svc of scraped) expect(svc.spec.type ?? 'ClusterIP').toBe('ClusterIP');
    }
  });
});

describe('the share pod NetworkPolicy', () => {
  const ownerShare: Share = {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'Share',
    metadata: { name: 'site', namespace: 'team-a', uid: 'uid-1' },
    spec: { backendMode: 'proxy', target: 'http://app:80' },
  };

  it('is off by default, and on admits only the ingress controller, access pods and extraFrom', async () => {
    expect((await runner.template(...domain)).filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
    const values = await valuesFile('netpol.yaml', {
      sharePodNetworkPolicy: {
        enabled: true,
        namespaces: ['team-a', 'team-b'],
        ingressController: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'traefik' } },
        },
        extraFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }],
      },
    });
    type Policy = Obj & {
      spec: {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: { from: Record<string, { matchLabels: Record<string, string> }>[] }[];
      };
    };
    const policies = (await runner.template(...domain, '-f', values)).filter(
      (o) => o.kind === 'NetworkPolicy',
    ) as Policy[];
    expect(policies.map((p) => p.metadata?.namespace)).toEqual(['team-a', 'team-b']);
    const policy = policies[0]!;
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    expect(policy.spec.ingress).toHaveLength(1);
    const from = policy.spec.ingress[0]!.from;
    expect(from).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'traefik' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'traefik' } },
      },
      {
        podSelector: {
          matchLabels: { 'app.kubernetes.io/managed-by': 'svc-operator', 'app.kubernetes.io/component': 'access' },
        },
      },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ]);
    // The selectors match the labels of the pods the operator writes.
    const valid = validateShare(ownerShare, undefined);
    if (!valid.ok) throw new Error('test Share invalid');
    const shareDeployment = desiredShareChildren(ownerShare, valid.value, {
      image: 'svc:1',
      domain: 'share.example.com',
    }).deployment as Obj & { spec: { template: PodSpec } };
    const shareLabels = shareDeployment.spec.template.metadata.labels;
    expect(shareLabels).toMatchObject(policy.spec.podSelector.matchLabels);
  });

  it('needs the share namespaces', async () => {
    const out = await runner.helm('template', 'svc', CHART, ...domain, '--set', 'sharePodNetworkPolicy.enabled=true');
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("at '/sharePodNetworkPolicy/namespaces'");
  });
});

describe('Gateway API HTTPRoutes', () => {
  type Route = Obj & {
    spec: {
      parentRefs: { name: string }[];
      hostnames: string[];
      rules: { backendRefs: { name: string; port: number }[] }[];
    };
  };
  const parentRefs = [{ name: 'public', namespace: 'gateway-system', sectionName: 'https' }];

  it('serve the auth host and the public frontend hosts through a Gateway, on their Services', async () => {
    const args = await everything('routes.yaml', {
      auth: { ingress: { enabled: false }, httpRoute: { enabled: true, parentRefs } },
      publicFrontend: { ingress: { enabled: false }, httpRoute: { enabled: true, parentRefs } },
    });
    const objs = await runner.template(...args, '--set', 'publicFrontend.service.port=8088');
    expect(objs.filter((o) => o.kind === 'Ingress')).toEqual([]);
    const auth = findObject(objs, 'HTTPRoute', 'svc-auth') as Route;
    expect(auth.spec.parentRefs).toEqual(parentRefs);
    expect(auth.spec.hostnames).toEqual(['auth.share.example.com']);
    const frontend = findObject(objs, 'HTTPRoute', 'svc-public-frontend') as Route;
    expect(frontend.spec.hostnames).toEqual(['*.share.example.com', 'share.example.com']);
    for (const route of [auth, frontend]) {
      const backend = route.spec.rules[0]!.backendRefs[0]!;
      const service = findObject(objs, 'Service', backend.name) as Service;
      expect(service.spec.ports.find((p) => p.name === 'http')?.port).toBe(backend.port);
    }
    expect(frontend.spec.rules[0]!.backendRefs[0]!.port).toBe(8088);
    expect((await runner.template(...publicFrontend())).filter((o) => o.kind === 'HTTPRoute')).toEqual([]);
  });

  it('need a Gateway to attach to', async () => {
    const out = await runner.helm('template', 'svc', CHART, ...domain, '--set', 'auth.httpRoute.enabled=true');
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("at '/auth/httpRoute/parentRefs'");
  });

  it('serve share hosts through the operator only with operator.shareHttpRoute, which grants httproutes', async () => {
    const httpRouteRules = (objs: Obj[]): Rule[] =>
      (findObject(objs, 'ClusterRole', 'svc-operator') as Obj & { rules: Rule[] }).rules.filter((r) =>
        r.resources?.includes('httproutes'),
      );
    const routeCheck = (objs: Obj[]): string =>
      (
        findObject(objs, 'ValidatingAdmissionPolicy', 'svc-operator-writes') as Obj & {
          spec: { validations: { expression: string }[] };
        }
      ).spec.validations
        .map((v) => v.expression)
        .find((e) => e.includes("variables.resource != 'httproutes'")) ?? '';
    const plain = await runner.template(...domain);
    expect(operatorArgs(plain).filter((a) => a.startsWith('--share-http-route'))).toEqual([]);
    expect(httpRouteRules(plain)).toEqual([]);
    expect(routeCheck(plain)).toContain('object.spec.parentRefs.all(p, false)');

    const values = await valuesFile('share-routes.yaml', {
      operator: {
        shareHttpRoute: { enabled: true, parentRefs, annotations: { 'example.com/note': 'a: b # c' }, tls: 'gateway' },
      },
    });
    const objs = await runner.template(...domain, '-f', values);
    const arg = operatorArgs(objs).find((a) => a.startsWith('--share-http-route=')) ?? '';
    const problems: Problem[] = [];
    expect(parseShareRoute(arg.slice('--share-http-route='.length), problems)).toEqual({
      parentRefs,
      annotations: { 'example.com/note': 'a: b # c' },
      tls: 'gateway',
    });
    expect(problems).toEqual([]);
    expect(httpRouteRules(objs)).toEqual([
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ]);
    expect(routeCheck(objs)).toContain(
      "p.name == 'public' && (has(p.namespace) ? p.namespace : object.metadata.namespace) == 'gateway-system' && (has(p.sectionName) ? p.sectionName : '') == 'https'",
    );
    expect(routeCheck(objs)).toContain("h.endsWith('.share.example.com')");
  });

  it.each([
    ['without a Gateway', 'operator.shareHttpRoute.enabled=true', "at '/operator/shareHttpRoute/parentRefs'"],
    ['with a TLS mode it does not know', 'operator.shareHttpRoute.tls=perHost', "at '/operator/shareHttpRoute/tls'"],
    [
      'with an unknown parentRef field',
      'operator.shareHttpRoute.parentRefs[0].name=gw,operator.shareHttpRoute.parentRefs[0].hostname=x',
      "at '/operator/shareHttpRoute/parentRefs/0'",
    ],
  ])('refuse share routes %s', async (_name, set, message) => {
    const out = await runner.helm('template', 'svc', CHART, ...domain, '--set', set);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain(message);
  });
});

describe("the controller's console", () => {
  /** The rendered controller.yaml's console section, read by the controller's own reader. */
  async function consoleOf(extra: string[]): Promise<ConsoleConfig> {
    const objs = await runner.template(...publicFrontend(), ...extra);
    const map = findObject(objs, 'ConfigMap', 'svc-controller') as Obj & { data: Record<string, string> };
    const doc = parseYaml(map.data['controller.yaml'] ?? '') as { console?: unknown };
    const r = new ConfigReader();
    const config = readConsoleConfig(r, doc.console);
    expect(r.problems).toEqual([]);
    return config;
  }

  it('takes its origin from the Ingress host (https with tls) and the admins from the values', async () => {
    const ingress = ['--set', 'controller.ingress.enabled=true,controller.ingress.host=api.example.com'];
    const tls = [
      '--set',
      'controller.ingress.tls[0].hosts[0]=api.example.com,controller.ingress.tls[0].secretName=api',
    ];
    const admins = ['--set', 'controller.console.admins[0]=Ops@Example.com,controller.console.sessionLifetime=2h'];
    const withTls = await consoleOf([...ingress, ...tls, ...admins]);
    expect(withTls.publicUrl?.href).toBe('https://api.example.com/');
    expect(withTls.admins).toEqual(['ops@example.com']);
    expect(withTls.sessionLifetimeMs).toBe(2 * 3_600_000);
    expect((await consoleOf(ingress)).publicUrl?.href).toBe('http://api.example.com/');
    const given = ['--set', 'controller.console.publicUrl=https://console.example.com'];
    expect((await consoleOf([...ingress, ...given])).publicUrl?.href).toBe('https://console.example.com/');
    expect((await consoleOf([])).publicUrl).toBeUndefined();
  });

  it('refuses a public URL with a path and an admin that is not an email', async () => {
    const bad = async (set: string) => runner.helm('template', 'svc', CHART, ...publicFrontend(), '--set', set);
    expect((await bad('controller.console.publicUrl=https://api.example.com/console')).stderr).toContain(
      "at '/controller/console/publicUrl'",
    );
    expect((await bad('controller.console.admins[0]=ops')).stderr).toContain("at '/controller/console/admins/0'");
  });
});

describe("the controller's console OAuth from a Secret", () => {
  const SECRET = 'client-secret-never-in-a-configmap';
  /** console-oauth.yaml as an operator writes it into the Secret. */
  const oauthYaml = `providers:
  - name: corp
    type: oidc
    issuer: https://id.example.com
    client_id: svc
    client_secret: ${SECRET}
    scopes: [openid, email]
    supports_pkce: true
signing_key: ${'s'.repeat(32)}
encryption_key: ${'e'.repeat(24)}
`;
  type Container = {
    name: string;
    command?: string[];
    args?: string[];
    volumeMounts?: { name: string; mountPath: string }[];
  };
  type Deployment = Obj & {
    spec: {
      template: {
        spec: {
          initContainers: Container[];
          containers: Container[];
          volumes: { name: string; secret?: { secretName: string } }[];
        };
      };
    };
  };

  /** Runs the init container's merge script as the pod would, on files under `work`. */
  async function merge(
    oauthText: string,
    base: string,
  ): Promise<{ code: number | null; stderr: string; out?: string }> {
    const dir = await mkdtemp(join(work, 'merge-'));
    const [baseFile, oauthFile, outFile] = ['base.yaml', 'oauth.yaml', 'out.yaml'].map((f) => join(dir, f));
    await writeFile(baseFile!, base);
    await writeFile(oauthFile!, oauthText);
    const objs = await runner.template(...publicFrontend(), '--set', 'controller.console.oauthSecret=console-oauth');
    const init = (findObject(objs, 'Deployment', 'svc-controller') as Deployment).spec.template.spec.initContainers;
    const command = init.find((c) => c.name === 'console-oauth')?.command ?? [];
    expect(command.slice(0, 2)).toEqual(['node', '-e']);
    const child = spawnSync(process.execPath, ['-e', command[2]!, baseFile!, oauthFile!, outFile!], {
      cwd: join(import.meta.dirname, '..', '..'),
      encoding: 'utf8',
    });
    if (child.status !== 0) return { code: child.status, stderr: child.stderr };
    expect(statSync(outFile!).mode & 0o777).toBe(0o600);
    return { code: child.status, stderr: child.stderr, out: readFileSync(outFile!, 'utf8') };
  }

  it('mounts the Secret for an init container and keeps every secret out of the ConfigMap', async () => {
    const objs = await runner.template(...publicFrontend(), '--set', 'controller.console.oauthSecret=console-oauth');
    const map = findObject(objs, 'ConfigMap', 'svc-controller') as Obj & { data: Record<string, string> };
    const base = map.data['controller.yaml'] ?? '';
    expect((parseYaml(base) as { console: Record<string, unknown> }).console.oauth).toBeUndefined();
    const pod = (findObject(objs, 'Deployment', 'svc-controller') as Deployment).spec.template.spec;
    expect(pod.volumes.find((v) => v.name === 'console-oauth')?.secret?.secretName).toBe('console-oauth');
    const controller = pod.containers.find((c) => c.name === 'controller')!;
    expect(controller.args).toContain('--config=/run/svc/config/controller.yaml');
    expect(controller.volumeMounts?.map((m) => m.name)).not.toContain('console-oauth');

    const merged = await merge(oauthYaml, base);
    expect(merged.code).toBe(0);
    const doc = parseYaml(merged.out ?? '') as { console?: unknown; public_frontend?: unknown };
    expect(doc.public_frontend).toEqual((parseYaml(base) as { public_frontend: unknown }).public_frontend);
    const r = new ConfigReader();
    const config = readConsoleConfig(r, doc.console, { oauth: true });
    expect(r.problems).toEqual([]);
    expect(config.oauth?.providers.map((p) => p.name)).toEqual(['corp']);

    const without = await runner.template(...publicFrontend());
    const plain = (findObject(without, 'Deployment', 'svc-controller') as Deployment).spec.template.spec;
    expect(plain.initContainers.map((c) => c.name)).toEqual(['identity']);
    expect(plain.containers[0]?.args).toContain('--config=/etc/svc/controller/controller.yaml');
  });

  it('names the file and line of a bad console-oauth.yaml without quoting it', async () => {
    const bad = await merge(`providers: [\n  client_secret: ${SECRET}\n`, 'console: {}\n');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/oauth\.yaml: not valid YAML \(\w+ at line \d+\)/);
    expect(bad.stderr).not.toContain(SECRET);
    const list = await merge(`- ${SECRET}\n`, 'console: {}\n');
    expect(list.stderr).toContain('oauth.yaml: must be the console.oauth mapping');
    expect(list.stderr).not.toContain(SECRET);
  });

  it('refuses a Secret name Kubernetes would refuse', async () => {
    const out = await runner.helm(
      'template',
      'svc',
      CHART,
      ...publicFrontend(),
      '--set',
      'controller.console.oauthSecret=Bad_Name',
    );
    expect(out.code).not.toBe(0);
    expect(out.stderr).toContain("at '/controller/console/oauthSecret'");
  });
});

describe('helm lint --strict', () => {
  it('passes with every optional part on', async () => {
    const args = await everything('lint-all.yaml', {
      serviceMonitor: { enabled: true },
      sharePodNetworkPolicy: { enabled: true, namespaces: ['team-a'] },
      auth: { httpRoute: { enabled: true, parentRefs: [{ name: 'gw' }] }, priorityClassName: 'high' },
      publicFrontend: { httpRoute: { enabled: true, parentRefs: [{ name: 'gw' }] }, podLabels: { a: 'b' } },
      operator: {
        sharePods: { priorityClassName: 'low', podLabels: { team: 'x' } },
        shareHttpRoute: { enabled: true, parentRefs: [{ name: 'gw', namespace: 'gateway-system' }], tls: 'gateway' },
        extraEnv: [{ name: 'A', value: '1' }],
      },
      controller: { console: { oauthSecret: 'console-oauth' } },
    });
    const out = await runner.helm('lint', CHART, '--strict', ...args);
    expect(out.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    expect(out.code).toBe(0);
  });
});
