/**
 * The installation's pod settings (`--pod-settings`, the chart's operator.sharePods) on the real API
 * server: the operator started with them writes share and access Deployments whose pod templates
 * carry the pull secrets, pull policy, resources, scheduling fields, priority class, labels and
 * annotations, and the API server (which validates every one of those fields) stores them as given.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePodSettings } from '../../operator/pod-settings.ts';
import type { Problem } from '../../lib/errors.ts';
import { POD_SETTINGS } from '../support/pod-settings.ts';
import type { ControlPlane } from './envtest.ts';
import {
  api,
  createAccess,
  createShare,
  eventually,
  getOrNone,
  paths,
  startCluster,
  startTestOperator,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';

let cp: ControlPlane;
let operator: TestOperator;

beforeAll(async () => {
  cp = await startCluster();
  await api(cp, '/apis/scheduling.k8s.io/v1/priorityclasses', {
    method: 'POST',
    body: { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'tenant-low' }, value: 100 },
  });
  const problems: Problem[] = [];
  const podSettings = parsePodSettings(JSON.stringify(POD_SETTINGS), problems);
  expect(problems).toEqual([]);
  operator = await startTestOperator(cp, { podSettings });
}, 180_000);

afterAll(async () => {
  await operator?.close();
  await cp?.stop();
});

type PodTemplate = {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
};

async function podTemplate(deployment: string): Promise<PodTemplate> {
  const d = await eventually(() => getOrNone(cp, paths.deployment(deployment)), `Deployment ${deployment}`);
  return (d as Obj & { spec: { template: PodTemplate } }).spec.template;
}

function expectSettings(pod: PodTemplate, component: string): void {
  expect(pod.spec).toMatchObject({
    imagePullSecrets: POD_SETTINGS.imagePullSecrets,
    nodeSelector: POD_SETTINGS.nodeSelector,
    tolerations: POD_SETTINGS.tolerations,
    affinity: POD_SETTINGS.affinity,
    priorityClassName: 'tenant-low',
    automountServiceAccountToken: false,
  });
  for (const c of pod.spec.containers)
    expect(c).toMatchObject({ imagePullPolicy: 'Always', resources: POD_SETTINGS.resources });
  expect(pod.metadata.labels).toMatchObject({
    team: 'platform',
    'app.kubernetes.io/managed-by': 'svc-operator',
    'app.kubernetes.io/component': component,
  });
  expect(pod.metadata.annotations).toMatchObject(POD_SETTINGS.annotations);
}

describe('operator: pod settings on a real API server', () => {
  it("a Share's and an Access's Deployments carry the installation's pod settings", async () => {
    await createShare(cp, 'private-db', {
      shareMode: 'private',
      backendMode: 'proxy',
      target: 'http://db.default.svc:5432',
      token: 'privdb',
    });
    expectSettings(await podTemplate('svc-share-private-db'), 'share');
    await createAccess(cp, 'reach-db', { shareToken: 'privdb', bindPort: 15432 });
    expectSettings(await podTemplate('svc-access-reach-db'), 'access');
  });
});
