import { describe, expect, it } from 'vitest';
import { problemText, type Problem } from '../lib/errors.ts';
import type { Access, KubeObject, Share } from '../lib/kube/resources.ts';
import { desiredAccessChildren, validateAccess } from './access-children.ts';
import { desiredEnvironmentAgent, type AgentEnrollment } from './enrollment-children.ts';
import { parseOperatorFlags } from './options.ts';
import { parsePodSettings, type PodSettings } from './pod-settings.ts';
import { desiredShareChildren, validateShare } from './share-children.ts';
import { POD_SETTINGS } from '../test/support/pod-settings.ts';

function parsed(value: unknown): { settings: PodSettings; problems: Problem[] } {
  const problems: Problem[] = [];
  const settings = parsePodSettings(typeof value === 'string' ? value : JSON.stringify(value), problems);
  return { settings, problems };
}

interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
}

function template(deployment: KubeObject): PodTemplate {
  return (deployment.spec as { template: PodTemplate }).template;
}

/** Every setting lands on the pod, the operator's own labels and security settings stay. */
function expectSettingsApplied(deployment: KubeObject, ownLabels: Record<string, string>): void {
  const pod = template(deployment);
  expect(pod.spec).toMatchObject({
    imagePullSecrets: POD_SETTINGS.imagePullSecrets,
    nodeSelector: POD_SETTINGS.nodeSelector,
    tolerations: POD_SETTINGS.tolerations,
    affinity: POD_SETTINGS.affinity,
    priorityClassName: POD_SETTINGS.priorityClassName,
    securityContext: { runAsNonRoot: true },
  });
  expect(pod.spec.containers.length).toBeGreaterThan(0);
  for (const c of pod.spec.containers) {
    expect(c).toMatchObject({ imagePullPolicy: 'Always', resources: POD_SETTINGS.resources, image: 'svc:1' });
    expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true });
  }
  expect(pod.metadata.labels).toEqual({ team: 'platform', ...ownLabels });
  expect(pod.metadata.annotations).toMatchObject(POD_SETTINGS.annotations);
}

describe('parsePodSettings', () => {
  it('accepts every setting and leaves an empty flag as none', () => {
    const { settings, problems } = parsed(POD_SETTINGS);
    expect(problems).toEqual([]);
    expect(settings).toEqual(POD_SETTINGS);
    expect(parsed('').settings).toEqual({});
    expect(parsed({ imagePullSecrets: [], nodeSelector: {}, tolerations: [], affinity: {}, resources: {} })).toEqual({
      settings: {},
      problems: [],
    });
  });

  it('reports every problem with its field path at once', () => {
    const { problems } = parsed({
      imagePullSecret: [],
      imagePullSecrets: ['creds'],
      imagePullPolicy: 'Sometimes',
      resources: { requests: { cpu: 'lots' }, limit: {} },
      nodeSelector: { pool: 3 },
      tolerations: [{ key: 'a', effects: 'NoSchedule' }],
      affinity: { nodeAfinity: {} },
      priorityClassName: 'Not_A_Name',
      labels: { 'app.kubernetes.io/managed-by': 'me', team: 'has space' },
      annotations: { 'bad key!': 'x' },
    });
    const text = problems.map(problemText);
    for (const path of [
      '--pod-settings: imagePullSecret',
      '--pod-settings: imagePullSecrets[0]',
      '--pod-settings: imagePullPolicy',
      '--pod-settings: resources.requests.cpu',
      '--pod-settings: resources.limit',
      '--pod-settings: nodeSelector.pool',
      '--pod-settings: tolerations[0].effects',
      '--pod-settings: affinity.nodeAfinity',
      '--pod-settings: priorityClassName',
      '--pod-settings: labels.app.kubernetes.io/managed-by',
      '--pod-settings: labels.team',
      '--pod-settings: annotations.bad key!',
    ])
      expect(
        text.some((t) => t.startsWith(path)),
        `${path} in ${text.join('\n')}`,
      ).toBe(true);
    expect(problems).toHaveLength(12);
  });

  it('rejects text that is not a JSON object, through the operator flags', () => {
    const flags = {
      namespaceScope: 'all',
      frontendSecret: 'svc-system/svc-frontend',
      shareDomain: 'share.example.com',
      image: 'svc:1',
    };
    expect(() => parseOperatorFlags({ ...flags, podSettings: '{nodeSelector:' })).toThrow(/--pod-settings.*JSON/);
    expect(() => parseOperatorFlags({ ...flags, podSettings: '[1]' })).toThrow(/--pod-settings: must be a JSON object/);
    expect(parseOperatorFlags({ ...flags, podSettings: JSON.stringify(POD_SETTINGS) }).podSettings).toEqual(
      POD_SETTINGS,
    );
    expect(parseOperatorFlags(flags).podSettings).toEqual({});
  });
});

describe('pod settings on the rendered pods', () => {
  const { settings } = parsed(POD_SETTINGS);

  it('a share pod carries them, on the agent and the OAuth sidecar alike', () => {
    const owner: Share = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Share',
      metadata: { name: 'site', namespace: 'team', uid: 'uid-1', generation: 1 },
      spec: { backendMode: 'proxy', target: 'http://app:80' },
    };
    const v = validateShare(owner, undefined);
    if (!v.ok) throw new Error(v.problems.map(problemText).join('; '));
    const c = desiredShareChildren(owner, v.value, { image: 'svc:1', domain: 'share.example.com', pods: settings });
    expectSettingsApplied(c.deployment, {
      'app.kubernetes.io/managed-by': 'svc-operator',
      'svc.dev/share': 'site',
      'app.kubernetes.io/name': 'svc-share',
      'app.kubernetes.io/component': 'share',
    });
    expect(template(c.deployment).spec).toMatchObject({ automountServiceAccountToken: false });
    const plain = desiredShareChildren(owner, v.value, { image: 'svc:1', domain: 'share.example.com' });
    const plainPod = template(plain.deployment);
    expect(plainPod.spec.imagePullSecrets).toBeUndefined();
    expect(plainPod.spec.containers[0]?.resources).toEqual({
      requests: { cpu: '10m', memory: '64Mi' },
      limits: { memory: '256Mi' },
    });
  });

  it('an access pod carries them', () => {
    const access: Access = { metadata: { name: 'reach', namespace: 'team', uid: 'u' }, spec: { shareToken: 'tok' } };
    const share: Share = { metadata: { name: 'db', namespace: 'team', uid: 's' }, spec: { shareMode: 'private' } };
    const v = validateAccess(access);
    if (!v.ok) throw new Error('invalid');
    const c = desiredAccessChildren(access, v.value, share, 'svc:1', settings);
    expectSettingsApplied(c.deployment, {
      'app.kubernetes.io/managed-by': 'svc-operator',
      'svc.dev/access': 'reach',
      'app.kubernetes.io/name': 'svc-access',
      'app.kubernetes.io/component': 'access',
    });
  });

  it('an environment-agent pod carries them and keeps its enrollment annotation', () => {
    const owner: AgentEnrollment = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'AgentEnrollment',
      metadata: { name: 'team', namespace: 'team-a', uid: 'uid-1', generation: 1 },
      spec: {},
    };
    const c = desiredEnvironmentAgent(
      owner,
      {
        version: 1,
        apiEndpoint: 'https://ctl.example.com',
        envZId: 'envaaaaaaaaa',
        enrollmentId: 'enraaaaaaaaa',
        token: 'svce_enraaaaaaaaa_secret',
        controller: { zId: 'ctlaaaaaaaaaaaaaaaa', publicKey: 'pk' },
        enrolledAt: '2025-01-01T00:00:00Z',
      },
      'svc:1',
      { ...settings, annotations: { ...settings.annotations, 'svc.dev/enrollment-id': 'forged' } },
    );
    expectSettingsApplied(c.deployment, {
      'app.kubernetes.io/managed-by': 'svc-operator',
      'svc.dev/agent-enrollment': 'team',
      'app.kubernetes.io/name': 'svc-environment-agent',
      'app.kubernetes.io/component': 'environment-agent',
    });
    expect(template(c.deployment).metadata.annotations?.['svc.dev/enrollment-id']).toBe('enraaaaaaaaa');
    expect(template(c.deployment).spec.serviceAccountName).toBe('svc-agent-team');
  });
});
