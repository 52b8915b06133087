/**
 * The chart as a platform review reads it, rendered with the real helm binary (no cluster):
 * annotation values passed whole, metrics never on a public Service, no disruption budget that
 * blocks drains, a leader-election Lease per release, share TLS and the unenroll deadline plumbed
 * to the operator, RBAC without bind/escalate matching docs/kubernetes.md, the operator's admission
 * policy, and `helm lint --strict` of the values these add.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify as toYaml } from 'yaml';
import { locateHelm } from './binaries.ts';
import { CHART, KUBE_VERSION, RELEASE_NS, findObject, helmRunner, type HelmRunner, type Obj } from './helm-runner.ts';
import type { Problem } from '../../lib/errors.ts';
import { parsePodSettings } from '../../operator/pod-settings.ts';

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

  it.each([
    ['a TLS mode it does not know', 'operator.shareIngress.tls.mode=wildcard', "at '/operator/shareIngress/tls/mode'"],
    [
      'mode secret without its Secret',
      'operator.shareIngress.tls.mode=secret',
      "at '/operator/shareIngress/tls/secretName'",
    ],
    ['an unenroll deadline of 0', 'operator.unenrollDeadlineMinutes=0', "at '/operator/unenrollDeadlineMinutes'"],
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
