/**
 * The frontend replicas' side of the API server in the replica tests: a namespace whose only grant
 * to the frontend's user is the Role the chart gives the frontend (docs/design.md, "More than one
 * frontend replica"), and the tunnel Leases as the API server holds them.
 */
import type { Lease } from '../../lib/kube/lease.ts';
import { envLabel, ENV_LABEL } from '../../sidecar/tunnel/tunnel-leases.ts';
import type { ControlPlane, UserCredentials } from './envtest.ts';
import { rawRequest } from './raw.ts';

/**
 * Creates `namespace` and binds `user` to exactly `coordination.k8s.io` `leases`
 * get/list/watch/create/update/patch/delete in it — nothing else — and returns the user's kubeconfig.
 */
export async function leasesOnlyUser(cp: ControlPlane, namespace: string, user: string): Promise<UserCredentials> {
  await rawRequest(cp.kubeConfig, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: namespace } } });
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}`;
  await rawRequest(cp.kubeConfig, `${rbac}/roles`, {
    method: 'POST',
    body: {
      metadata: { name: 'svc-frontend-leases' },
      rules: [
        {
          apiGroups: ['coordination.k8s.io'],
          resources: ['leases'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
      ],
    },
  });
  await rawRequest(cp.kubeConfig, `${rbac}/rolebindings`, {
    method: 'POST',
    body: {
      metadata: { name: 'svc-frontend-leases' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'svc-frontend-leases' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
  return await cp.userKubeConfig(user);
}

/** The tunnel Leases of one environment in `namespace`, read as the admin. */
export async function tunnelLeases(cp: ControlPlane, namespace: string, envZId: string): Promise<Lease[]> {
  const selector = encodeURIComponent(`${ENV_LABEL}=${envLabel(envZId)}`);
  const list = (await rawRequest(
    cp.kubeConfig,
    `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases?labelSelector=${selector}`,
  )) as { items: Lease[] };
  return list.items;
}
