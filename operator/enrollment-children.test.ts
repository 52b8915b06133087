import { describe, expect, it } from 'vitest';
import type { EnrollmentFile } from '../lib/remoting/files.ts';
import { SvcError, problemText } from '../lib/errors.ts';
import {
  ENROLLMENT_FILE_KEY,
  controllerFailure,
  desiredEnvironmentAgent,
  enrollmentSecret,
  readEnrollmentState,
  validateEnrollment,
  type AgentEnrollment,
} from './enrollment-children.ts';

const owner = (spec: AgentEnrollment['spec'], name = 'team'): AgentEnrollment => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'AgentEnrollment',
  metadata: { name, namespace: 'team-a', uid: 'uid-1', generation: 1 },
  spec,
});
const file: EnrollmentFile = {
  version: 1,
  apiEndpoint: 'https://ctl.example.com',
  envZId: 'envaaaaaaaaa',
  enrollmentId: 'enraaaaaaaaa',
  token: 'svce_enraaaaaaaaa_secret',
  controller: { zId: 'ctlaaaaaaaaaaaaaaaa', publicKey: 'pk' },
  enrolledAt: '2025-01-01T00:00:00Z',
};

describe('validateEnrollment', () => {
  it('accepts a base URL and keeps its origin', () => {
    const v = validateEnrollment(
      owner({ controllerUrl: 'https://ctl.example.com:8443/', accountTokenSecretRef: { name: 's', key: 'k' } }),
    );
    expect(v).toEqual({
      ok: true,
      value: { controllerUrl: 'https://ctl.example.com:8443', secretName: 's', secretKey: 'k', description: '' },
    });
  });

  it('reports every problem with its field path', () => {
    const v = validateEnrollment(owner({ controllerUrl: 'ftp://x', accountTokenSecretRef: {} }, 'n'.repeat(60)));
    expect(v.ok).toBe(false);
    if (!v.ok) {
      expect(v.problems.map(problemText)).toEqual([
        expect.stringMatching(/^metadata\.name: at most 53 characters/),
        'spec.controllerUrl: must be an absolute http or https URL, got "ftp://x"',
        'spec.accountTokenSecretRef.name: required',
        'spec.accountTokenSecretRef.key: required',
      ]);
    }
  });

  it('refuses a path in controllerUrl (the API is at /api/v1 of the origin)', () => {
    const v = validateEnrollment(
      owner({ controllerUrl: 'https://x/api', accountTokenSecretRef: { name: 's', key: 'k' } }),
    );
    expect(v.ok).toBe(false);
  });
});

describe('enrollment state Secret', () => {
  it('round-trips the state and leaves the enrollment file out until enrolled', () => {
    const e = owner({});
    const partial = enrollmentSecret(e, { controllerUrl: 'https://c', envZId: 'envaaaaaaaaa' });
    expect(Object.keys(partial.data as object).sort()).toEqual(['controllerUrl', 'envZId']);
    expect(readEnrollmentState(partial.data as Record<string, string>)).toEqual({
      controllerUrl: 'https://c',
      envZId: 'envaaaaaaaaa',
    });
    const full = enrollmentSecret(e, { controllerUrl: 'https://c', envZId: 'envaaaaaaaaa', enrollment: file });
    expect(readEnrollmentState(full.data as Record<string, string>)?.enrollment).toEqual(file);
    expect(full.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'AgentEnrollment', name: 'team', uid: 'uid-1', controller: true }),
    ]);
  });

  it('ignores an enrollment file for another environment', () => {
    const data = enrollmentSecret(owner({}), {
      controllerUrl: 'https://c',
      envZId: 'envbbbbbbbbb',
      enrollment: file,
    }).data as Record<string, string>;
    expect(readEnrollmentState(data)?.enrollment).toBeUndefined();
    expect(readEnrollmentState(undefined)).toBeUndefined();
  });
});

describe('desiredEnvironmentAgent', () => {
  const children = desiredEnvironmentAgent(owner({}), file, 'svc:1');

  it('grants Shares and Accesses in its namespace only', () => {
    expect(children.role.rules).toEqual([
      {
        apiGroups: ['svc.dev'],
        resources: ['shares', 'accesses'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ]);
    expect(children.roleBinding).toMatchObject({
      metadata: { name: 'svc-agent-team', namespace: 'team-a' },
      roleRef: { kind: 'Role', name: 'svc-agent-team' },
      subjects: [{ kind: 'ServiceAccount', name: 'svc-agent-team', namespace: 'team-a' }],
    });
  });

  it('runs svc agent environment with only the enrollment file mounted from the Secret', () => {
    const pod = (children.deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec as {
      serviceAccountName: string;
      containers: { args: string[]; volumeMounts: { mountPath: string }[]; readinessProbe?: unknown }[];
      volumes: { name: string; secret?: { secretName: string; items: { key: string }[] } }[];
    };
    expect(pod.serviceAccountName).toBe('svc-agent-team');
    expect(pod.containers[0]?.args).toEqual([
      'agent',
      'environment',
      '--namespace',
      'team-a',
      '--enrollment-file',
      `/etc/svc/enrollment/${ENROLLMENT_FILE_KEY}`,
      '--health-listen',
      '0.0.0.0:8081',
    ]);
    expect(pod.containers[0]?.readinessProbe).toEqual({
      httpGet: { path: '/readyz', port: 'health' },
      periodSeconds: 10,
    });
    const secret = pod.volumes.find((v) => v.secret)?.secret;
    expect(secret).toMatchObject({ secretName: 'svc-agent-team-enrollment', items: [{ key: ENROLLMENT_FILE_KEY }] });
    expect(JSON.stringify(children)).not.toContain(file.token);
  });
});

describe('controllerFailure', () => {
  it.each([
    ['controller_unreachable', 'ControllerUnreachable', true],
    ['unauthorized', 'AccountTokenInvalid', false],
    ['agent_controller_not_configured', 'RemotingNotConfigured', false],
    ['internal_error', 'EnrollmentFailed', true],
  ] as const)('%s → %s', (code, reason, retry) => {
    expect(controllerFailure(new SvcError(code, 'x'))).toEqual({ reason, retry });
  });
});
