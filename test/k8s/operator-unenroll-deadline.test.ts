/**
 * An AgentEnrollment deleted while its controller is gone must not keep its finalizer (and so its
 * namespace's deletion) forever: the operator retries unenrolling until the unenroll deadline,
 * then drops the finalizer with a Warning Event naming the environment left at the controller.
 * Real kube-apiserver; the controller URL points at a port where nothing listens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './envtest.ts';
import {
  api,
  eventually,
  getOrNone,
  paths,
  startCluster,
  startTestOperator,
  type TestOperator,
} from './operator-fixture.ts';

const NS = 'team-gone';
const GONE = 'http://127.0.0.1:1';
const DEADLINE_MS = 3_000;
const enrollment = `/apis/svc.dev/v1alpha1/namespaces/${NS}/agentenrollments/team`;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

let cp: ControlPlane;
let operator: TestOperator;

beforeAll(async () => {
  cp = await startCluster();
  await api(cp, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: NS } } });
  await api(cp, `/api/v1/namespaces/${NS}/secrets`, {
    method: 'POST',
    body: { metadata: { name: 'account' }, stringData: { token: `svca_aaaaaaaaaaaa_${'x'.repeat(43)}` } },
  });
  // The state an enrolled AgentEnrollment leaves: envZId and the enrollment file, at a controller
  // that has since gone away.
  const file = {
    version: 1,
    apiEndpoint: GONE,
    envZId: 'envgone',
    enrollmentId: 'enr1',
    token: 'svce_enrollment-token-of-a-gone-controller',
    controller: { zId: 'ctl', publicKey: 'pk' },
    enrolledAt: new Date().toISOString(),
  };
  await api(cp, `/api/v1/namespaces/${NS}/secrets`, {
    method: 'POST',
    body: {
      metadata: { name: 'svc-agent-team-enrollment', labels: { 'app.kubernetes.io/managed-by': 'svc-operator' } },
      type: 'Opaque',
      data: { controllerUrl: b64(GONE), envZId: b64('envgone'), 'agent-enrollment.json': b64(JSON.stringify(file)) },
    },
  });
  await api(cp, `/apis/svc.dev/v1alpha1/namespaces/${NS}/agentenrollments`, {
    method: 'POST',
    body: {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'AgentEnrollment',
      metadata: { name: 'team', finalizers: ['svc.dev/unenroll'] },
      spec: { controllerUrl: GONE, accountTokenSecretRef: { name: 'account', key: 'token' } },
    },
  });
  operator = await startTestOperator(cp, {
    unenrollDeadlineMs: DEADLINE_MS,
    reconcileBackoff: { baseMs: 200, maxMs: 1_000 },
  });
}, 120_000);

afterAll(async () => {
  await operator?.close();
  await cp?.stop();
});

describe('the unenroll finalizer', () => {
  it('is dropped with a Warning Event once the controller stays unreachable past the deadline', async () => {
    await api(cp, enrollment, { method: 'DELETE' });
    const deletedAt = Date.now();
    // Within the deadline the finalizer stays and Ready says why.
    const waiting = await eventually(async () => {
      const e = await getOrNone(cp, enrollment);
      const ready = (e?.status?.conditions as { type: string; reason: string }[] | undefined)?.find(
        (c) => c.type === 'Ready',
      );
      return ready?.reason === 'ControllerUnreachable' ? e : undefined;
    }, 'Ready=False ControllerUnreachable while unenrolling');
    expect((waiting.metadata as { finalizers?: string[] }).finalizers).toContain('svc.dev/unenroll');
    await eventually(async () => !(await getOrNone(cp, enrollment)), 'the AgentEnrollment to go', 30_000);
    expect(Date.now() - deletedAt).toBeGreaterThanOrEqual(DEADLINE_MS - 1_000);
    const events = (await api(cp, paths.events(NS))) as unknown as {
      items: { reason: string; type: string; message: string }[];
    };
    const skipped = events.items.find((e) => e.reason === 'UnenrollSkipped');
    expect(skipped?.type).toBe('Warning');
    expect(skipped?.message).toContain('finalizer removed; environment envgone stays at http://127.0.0.1:1');
    expect(JSON.stringify(events)).not.toContain('svce_enrollment-token');
  }, 60_000);
});
