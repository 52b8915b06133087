import { describe, expect, it } from 'vitest';
import * as r from './resources.ts';

describe('resources', () => {
  it('name every resource with the group, version and plural the API server serves', () => {
    const paths = [
      r.SHARES,
      r.ACCESSES,
      r.AGENT_ENROLLMENTS,
      r.SERVICES,
      r.SECRETS,
      r.SERVICE_ACCOUNTS,
      r.EVENTS,
      r.DEPLOYMENTS,
      r.INGRESSES,
      r.ROLES,
      r.ROLE_BINDINGS,
      r.LEASES,
    ].map((x) => r.resourcePath(x, 'ns'));
    expect(paths).toEqual([
      '/apis/svc.dev/v1alpha1/namespaces/ns/shares',
      '/apis/svc.dev/v1alpha1/namespaces/ns/accesses',
      '/apis/svc.dev/v1alpha1/namespaces/ns/agentenrollments',
      '/api/v1/namespaces/ns/services',
      '/api/v1/namespaces/ns/secrets',
      '/api/v1/namespaces/ns/serviceaccounts',
      '/api/v1/namespaces/ns/events',
      '/apis/apps/v1/namespaces/ns/deployments',
      '/apis/networking.k8s.io/v1/namespaces/ns/ingresses',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles',
      '/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings',
      '/apis/coordination.k8s.io/v1/namespaces/ns/leases',
    ]);
    expect(r.apiVersion(r.SECRETS)).toBe('v1');
    expect(r.apiVersion(r.LEASES)).toBe('coordination.k8s.io/v1');
    expect(r.SERVICE_ACCOUNTS.kind).toBe('ServiceAccount');
  });
});
