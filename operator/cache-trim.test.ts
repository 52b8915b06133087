import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { problemText } from '../lib/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { Informer, type ListWatchSource } from '../lib/kube/informer.ts';
import {
  DEPLOYMENTS,
  HTTP_ROUTES,
  INGRESSES,
  SECRETS,
  SERVICES,
  SHARES,
  type KubeObject,
  type Resource,
  type Share,
} from '../lib/kube/resources.ts';
import { LAST_APPLIED_ANNOTATION, cacheTrim } from './cache-trim.ts';
import { containsDesired } from './conditions.ts';
import { parseInstallation } from './frontend-secret.ts';
import { deploymentNotServing, ingressNotServing } from './readiness.ts';
import { desiredShareChildren, validateShare } from './share-children.ts';
import { desiredShareRoute, routeNotServing } from './share-route.ts';
import { deploymentAvailable } from './status.ts';
import { needsReconcile } from './watches.ts';
import { oauthSection } from '../test/support/installation-oauth.ts';
import { availableDeploymentStatus } from '../test/support/deployment-status.ts';

const logger = createLogger('test', { destination: new Writable({ write: (_c, _e, cb) => cb() }) });

function trim(resource: Resource, obj: KubeObject): KubeObject {
  const transform = cacheTrim(resource);
  if (!transform) throw new Error(`no trim for ${resource.kind}`);
  return transform(obj);
}

/** What every field manager's server-side apply or update leaves: one entry per manager, each a copy of the field paths. */
function managedFields(obj: KubeObject): unknown[] {
  return ['svc-operator', 'kube-controller-manager', 'kubectl-client-side-apply'].map((manager) => ({
    manager,
    operation: 'Apply',
    apiVersion: obj.apiVersion,
    time: '2026-11-26T10:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:labels': {} }, 'f:spec': JSON.parse(JSON.stringify(obj.spec ?? {})) as unknown },
  }));
}

/** `desired` as the API server returns it: identity, defaults, managedFields, kubectl's annotation, a status. */
function live(desired: KubeObject, status?: unknown, specDefaults: Record<string, unknown> = {}): KubeObject {
  const copy = structuredClone(desired);
  return {
    ...copy,
    metadata: {
      ...copy.metadata,
      uid: `uid-${copy.metadata.name}`,
      resourceVersion: '41',
      generation: 3,
      creationTimestamp: '2026-11-26T10:00:00Z',
      annotations: { ...copy.metadata.annotations, [LAST_APPLIED_ANNOTATION]: JSON.stringify(desired) },
      managedFields: managedFields(copy),
    } as KubeObject['metadata'],
    ...(copy.spec !== undefined ? { spec: { ...(copy.spec as object), ...specDefaults } } : {}),
    ...(status !== undefined ? { status } : {}),
  };
}

function oauthShare(): { share: Share; children: ReturnType<typeof desiredShareChildren> } {
  const install = parseInstallation({
    'oauth.yaml': Buffer.from(JSON.stringify({ oauth: oauthSection() })).toString('base64'),
  });
  if (!install.ok) throw new Error(install.problems.map(problemText).join('; '));
  const share: Share = {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'Share',
    metadata: { name: 'web', namespace: 'team', uid: 'uid-web', generation: 2 },
    spec: {
      backendMode: 'proxy',
      target: 'http://app.team.svc:8080',
      oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'] },
    },
  };
  const valid = validateShare(share, install.value);
  if (!valid.ok) throw new Error(valid.problems.map(problemText).join('; '));
  const children = desiredShareChildren(share, valid.value, {
    image: 'svc:test',
    domain: 'share.example.com',
    installation: install.value,
    ingress: { className: 'nginx', annotations: { 'cert-manager.io/cluster-issuer': 'letsencrypt' } },
  });
  return { share, children };
}

const availableStatus = {
  ...availableDeploymentStatus(3, new Date('2026-11-26T10:00:05Z')),
  conditions: [
    ...(availableDeploymentStatus(3).conditions as unknown[]),
    {
      type: 'Progressing',
      status: 'True',
      reason: 'NewReplicaSetAvailable',
      message: 'ReplicaSet "svc-share-web-5d9" has successfully progressed.',
      lastUpdateTime: '2026-11-26T10:00:05Z',
      lastTransitionTime: '2026-11-26T10:00:00Z',
    },
  ],
};

const failingStatus = {
  observedGeneration: 3,
  replicas: 0,
  unavailableReplicas: 1,
  conditions: [
    {
      type: 'ReplicaFailure',
      status: 'True',
      reason: 'FailedCreate',
      message: 'pods "svc-share-web-5d9-x" is forbidden: exceeded quota: compute',
      lastUpdateTime: '2026-11-26T10:00:05Z',
      lastTransitionTime: '2026-11-26T10:00:05Z',
    },
  ],
};

describe('cache trim', () => {
  it('drops managedFields and kubectl’s last-applied annotation, keeps the metadata and spec the reconcilers read', () => {
    const share: Share = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Share',
      metadata: {
        name: 'web',
        namespace: 'team',
        uid: 'uid-web',
        resourceVersion: '7',
        generation: 2,
        creationTimestamp: '2026-11-26T10:00:00Z',
        deletionTimestamp: '2026-11-26T11:00:00Z',
        labels: { team: 'a' },
        annotations: { [LAST_APPLIED_ANNOTATION]: '{"spec":{}}', note: 'kept' },
        finalizers: ['example.com/hold'],
        managedFields: [{ manager: 'kubectl', fieldsV1: { 'f:spec': {} } }],
        selfLink: '/apis/svc.dev/v1alpha1/namespaces/team/shares/web',
      } as Share['metadata'],
      spec: { backendMode: 'proxy', target: 'http://app:8080', token: 'tok' },
      status: { token: 'tok', observedGeneration: 2, conditions: [] },
    };
    const before = structuredClone(share);
    const trimmed = trim(SHARES, share) as Share;
    const {
      managedFields: _fields,
      selfLink: _link,
      ...kept
    } = share.metadata as Share['metadata'] & {
      managedFields: unknown;
      selfLink: string;
    };
    expect(trimmed).toEqual({ ...share, metadata: { ...kept, annotations: { note: 'kept' } } });
    expect(share).toEqual(before);
    // Only kubectl's annotation: no empty annotations object is left behind.
    const bare = { ...share, metadata: { ...share.metadata, annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } } };
    expect(trim(SHARES, bare).metadata).not.toHaveProperty('annotations');
  });

  it('a live child containing its desired state still does once trimmed, and a drifted one still does not', () => {
    const { children } = oauthShare();
    const cases: [Resource, KubeObject, KubeObject][] = [
      [
        DEPLOYMENTS,
        children.deployment,
        live(children.deployment, availableStatus, { revisionHistoryLimit: 10, progressDeadlineSeconds: 600 }),
      ],
      [SERVICES, children.service, live(children.service, { loadBalancer: {} }, { clusterIP: '10.0.0.12' })],
      [INGRESSES, children.ingress!, live(children.ingress!, { loadBalancer: { ingress: [{ ip: '203.0.113.9' }] } })],
      [SECRETS, children.secret!, { ...live(children.secret!), type: 'Opaque' }],
    ];
    for (const [resource, desired, liveObject] of cases) {
      const trimmed = trim(resource, liveObject);
      expect(trimmed.metadata, resource.kind).not.toHaveProperty('managedFields');
      expect(trimmed.metadata.annotations ?? {}, resource.kind).not.toHaveProperty(LAST_APPLIED_ANNOTATION);
      expect(JSON.stringify(trimmed).length, resource.kind).toBeLessThan(JSON.stringify(liveObject).length);
      expect(containsDesired(trimmed, desired), resource.kind).toBe(true);
      expect(trimmed.metadata.ownerReferences, resource.kind).toEqual(desired.metadata.ownerReferences);
      const drifted = structuredClone(liveObject);
      drifted.metadata.labels = { ...drifted.metadata.labels, 'svc.dev/share': 'other' };
      expect(containsDesired(trim(resource, drifted), desired), resource.kind).toBe(false);
    }
    const drifted = structuredClone(cases[0]![2]);
    (drifted.spec as { replicas: number }).replicas = 5;
    expect(containsDesired(trim(DEPLOYMENTS, drifted), children.deployment)).toBe(false);
  });

  it('a child as a list returns it (no apiVersion or kind) still contains its desired state once trimmed', () => {
    const { children } = oauthShare();
    const cases: [Resource, KubeObject][] = [
      [DEPLOYMENTS, children.deployment],
      [SERVICES, children.service],
      [INGRESSES, children.ingress!],
      [SECRETS, children.secret!],
    ];
    for (const [resource, desired] of cases) {
      const { apiVersion: _v, kind: _k, ...listed } = live(desired);
      expect(containsDesired(listed, desired), resource.kind).toBe(false);
      expect(containsDesired(trim(resource, listed as KubeObject), desired), resource.kind).toBe(true);
    }
  });

  it('Ready, Available and the ingress address read the same from trimmed children', () => {
    const { children } = oauthShare();
    for (const status of [availableStatus, failingStatus, undefined]) {
      const deployment = live(children.deployment, status);
      const trimmed = trim(DEPLOYMENTS, deployment);
      expect(trimmed.status === undefined || !('replicas' in (trimmed.status as object))).toBe(true);
      expect(deploymentNotServing(trimmed, 'svc-share-web')).toEqual(deploymentNotServing(deployment, 'svc-share-web'));
      expect(deploymentAvailable(trimmed, 'Deployment')).toEqual(deploymentAvailable(deployment, 'Deployment'));
    }
    expect(deploymentNotServing(trim(DEPLOYMENTS, live(children.deployment, availableStatus)), 'x')).toBeUndefined();
    for (const status of [{ loadBalancer: { ingress: [{ hostname: 'lb.example.com' }] } }, { loadBalancer: {} }]) {
      const ingress = live(children.ingress!, status);
      expect(ingressNotServing(trim(INGRESSES, ingress), 'x')).toEqual(ingressNotServing(ingress, 'x'));
    }
  });

  it('an HTTPRoute keeps its spec and which Gateways accepted it, without timestamps', () => {
    const gateway = { name: 'public', namespace: 'gateway-system' };
    const desired = desiredShareRoute(
      { name: 'svc-share-web', namespace: 'team-a' },
      'web.example.com',
      'svc-share-web',
      {
        parentRefs: [gateway],
        annotations: {},
        tls: 'gateway',
      },
    );
    const route = {
      ...desired,
      metadata: { ...desired.metadata, managedFields: [{ manager: 'svc-operator' }] },
      status: {
        parents: [
          {
            parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', ...gateway },
            controllerName: 'example.com/gw',
            conditions: [
              {
                type: 'Accepted',
                status: 'True',
                reason: 'Accepted',
                message: '',
                lastTransitionTime: 'T',
                observedGeneration: 1,
              },
            ],
          },
        ],
      },
    } as KubeObject;
    const trimmed = trim(HTTP_ROUTES, route);
    expect(trimmed.metadata).not.toHaveProperty('managedFields');
    expect(trimmed.status).toEqual({
      parents: [
        {
          parentRef: route.status && (route.status as { parents: { parentRef: unknown }[] }).parents[0]!.parentRef,
          conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', message: '' }],
        },
      ],
    });
    expect(containsDesired(trimmed, desired)).toBe(true);
    expect(routeNotServing(trimmed, 'x', [gateway])).toEqual(routeNotServing(route, 'x', [gateway]));
    expect(routeNotServing(trimmed, 'x', [gateway])).toBeUndefined();
  });

  it('what needs a reconcile is decided the same from trimmed objects', () => {
    const { share } = oauthShare();
    const a = live(share, { observedGeneration: 3, conditions: [] });
    const relabelled = { ...structuredClone(a), metadata: { ...a.metadata, labels: { tier: 'gold' } } };
    const statusOnly = { ...structuredClone(a), metadata: { ...a.metadata, resourceVersion: '42' } };
    expect(needsReconcile(trim(SHARES, a), trim(SHARES, relabelled))).toBe(true);
    expect(needsReconcile(trim(SHARES, a), trim(SHARES, statusOnly))).toBe(false);
  });

  it('an informer with the trim stores listed and watched objects trimmed', async () => {
    const { children } = oauthShare();
    const listed = live(children.deployment, availableStatus);
    const watched = live({ ...children.service, metadata: { ...children.service.metadata, name: 'svc-share-b' } });
    const source: ListWatchSource = {
      list: () => Promise.resolve({ metadata: { resourceVersion: '41' }, items: [listed] }),
      watch: async (_query, onEvent, signal) => {
        onEvent({ type: 'ADDED', object: watched });
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
      },
    };
    const informer = new Informer({ name: 'test', source, logger, transform: (obj) => trim(DEPLOYMENTS, obj) });
    const added: KubeObject[] = [];
    informer.on({ onAdd: (obj) => added.push(obj) });
    informer.start();
    const deadline = Date.now() + 3000;
    while (informer.size < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await informer.stop();
    expect(informer.size).toBe(2);
    for (const obj of [...informer.list(), ...added]) {
      expect(obj.metadata).not.toHaveProperty('managedFields');
      expect(obj.metadata.annotations ?? {}).not.toHaveProperty(LAST_APPLIED_ANNOTATION);
    }
    expect(informer.get('team', listed.metadata.name)).toEqual(trim(DEPLOYMENTS, listed));
    expect(listed.metadata).toHaveProperty('managedFields');
  });
});
