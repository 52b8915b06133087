/**
 * Share hosts through a Gateway on a real API server (the Gateway API's own HTTPRoute CRD, fetched
 * by provide-binaries.sh): without the CRD a public Share says RouteApiMissing and the operator keeps
 * running; once the CRD is installed the operator writes an HTTPRoute for the share host to the
 * share's Service instead of its Ingress, and Ready follows the route's `status.parents`
 * (`Accepted`, written here as a Gateway controller would). Started again without
 * `--share-http-route`, the operator removes its HTTPRoutes and writes Ingresses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './envtest.ts';
import { applyCrds } from './crds.ts';
import { locateHttpRouteCrd } from './binaries.ts';
import {
  DOMAIN,
  NS,
  api,
  condition,
  createShare,
  eventually,
  getOrNone,
  markAvailable,
  paths,
  startCluster,
  startTestOperator,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';
import type { ShareRouteOptions } from '../../operator/share-route.ts';

const GATEWAY = { name: 'public', namespace: 'gateway-system', sectionName: 'https' };
const ROUTE: ShareRouteOptions = { parentRefs: [GATEWAY], annotations: { 'example.com/team': 'web' }, tls: 'gateway' };
const routePath = (name: string): string => `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes/${name}`;

let cp: ControlPlane;
let operator: TestOperator | undefined;

beforeAll(async () => {
  cp = await startCluster();
}, 120_000);

afterAll(async () => {
  await operator?.close();
  await cp?.stop();
});

/** The Share once its Ready condition has `reason`, marking its Deployment available meanwhile. */
async function shareWithReady(name: string, reason: string): Promise<Obj> {
  return await eventually(async () => {
    await markAvailable(cp, `svc-share-${name}`);
    const share = await getOrNone(cp, paths.share(name));
    return condition(share, 'Ready')?.reason === reason ? share : undefined;
  }, `Share ${name} Ready reason ${reason}`);
}

/** Writes the route's status as a Gateway controller does for the parent GATEWAY. */
async function reportParent(name: string, accepted: 'True' | 'False', reason: string): Promise<void> {
  const route = await api(cp, routePath(name));
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  await api(cp, `${routePath(name)}/status`, {
    method: 'PATCH',
    contentType: 'application/merge-patch+json',
    body: {
      status: {
        parents: [
          {
            parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', ...GATEWAY },
            controllerName: 'example.com/gateway-controller',
            conditions: [
              {
                type: 'Accepted',
                status: accepted,
                reason,
                message:
                  accepted === 'True' ? 'Route is accepted' : 'listener https does not allow routes from default',
                observedGeneration: route.metadata.generation ?? 1,
                lastTransitionTime: now,
              },
            ],
          },
        ],
      },
    },
  });
}

describe('share HTTPRoutes', () => {
  it('says RouteApiMissing without the Gateway API CRDs, and keeps serving other Shares', async () => {
    operator = await startTestOperator(cp, { ingress: { annotations: {}, route: ROUTE } });
    await createShare(cp, 'docs', { backendMode: 'proxy', target: 'http://docs.default.svc', token: 'docs1' });
    await createShare(cp, 'inner', { backendMode: 'proxy', target: 'http://inner.default.svc', shareMode: 'private' });
    const missing = await shareWithReady('docs', 'RouteApiMissing');
    expect(condition(missing, 'Ready')?.message).toContain('install the Gateway API CRDs');
    // The Event follows the status write: wait for it as a client watching Events would.
    await eventually(async () => {
      const events = (await api(cp, paths.events())).items as { reason: string; involvedObject: { name: string } }[];
      return events.some((e) => e.reason === 'RouteApiMissing' && e.involvedObject.name === 'docs') || undefined;
    }, 'a RouteApiMissing Event for docs');
    // The operator is not wedged: the private Share (no route) becomes Ready.
    await shareWithReady('inner', 'Available');
    expect(operator.isSynced()).toBe(true);
    expect(await getOrNone(cp, paths.ingress('svc-share-docs'))).toBeUndefined();
  }, 60_000);

  it('writes the HTTPRoute once the CRD exists, and Ready follows the Gateway accepting it', async () => {
    await applyCrds(cp.kubeConfig, [locateHttpRouteCrd()]);
    const route = await eventually(() => getOrNone(cp, routePath('svc-share-docs')), 'the share HTTPRoute', 60_000);
    expect(route.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'svc-operator' });
    expect(route.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Share', name: 'docs', controller: true }),
    ]);
    expect((route.metadata as { annotations?: Record<string, string> }).annotations).toMatchObject(ROUTE.annotations);
    expect(route.spec).toMatchObject({
      parentRefs: [GATEWAY],
      hostnames: [`docs1.${DOMAIN}`],
      rules: [{ backendRefs: [{ name: 'svc-share-docs', port: 80 }] }],
    });
    const pending = await shareWithReady('docs', 'RoutePending');
    expect(condition(pending, 'Ready')?.message).toContain('gateway-system/public');
    expect(pending.status?.frontendEndpoints).toEqual([`https://docs1.${DOMAIN}:8443`]);
    expect(condition(pending, 'TLS')).toMatchObject({ status: 'True', reason: 'TLSConfigured' });
    expect(condition(pending, 'TLS')?.message).toContain("Gateway's listener");

    await reportParent('svc-share-docs', 'False', 'NotAllowedByListeners');
    const refused = await shareWithReady('docs', 'RouteNotAccepted');
    expect(condition(refused, 'Ready')?.message).toContain('NotAllowedByListeners');
    await reportParent('svc-share-docs', 'True', 'Accepted');
    const ready = await shareWithReady('docs', 'Available');
    expect(condition(ready, 'Ready')?.message).toContain('HTTPRoute accepted');
    expect(await getOrNone(cp, paths.ingress('svc-share-docs'))).toBeUndefined();
  }, 90_000);

  it('switches a Share between Ingress and HTTPRoute, deleting the other kind', async () => {
    await operator?.close();
    operator = await startTestOperator(cp);
    await eventually(() => getOrNone(cp, paths.ingress('svc-share-docs')), 'the share Ingress');
    await eventually(
      async () => (await getOrNone(cp, routePath('svc-share-docs'))) === undefined,
      'the share HTTPRoute removed',
    );
    await operator.close();
    operator = await startTestOperator(cp, { ingress: { annotations: {}, route: ROUTE } });
    await eventually(() => getOrNone(cp, routePath('svc-share-docs')), 'the share HTTPRoute again');
    await eventually(
      async () => (await getOrNone(cp, paths.ingress('svc-share-docs'))) === undefined,
      'the share Ingress removed',
    );
  }, 60_000);
});
