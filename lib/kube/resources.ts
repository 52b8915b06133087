/**
 * The API resources the operator reads and writes, and the shapes of the objects it handles. Only
 * the fields the operator uses are typed; everything else passes through untouched.
 */
import type { ConditionReason } from '../error-codes.ts';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface KubeList<T extends KubeObject> {
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject & { code?: number; reason?: string; message?: string };
}

/** metav1.Condition. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

export interface ShareSpec {
  shareMode?: 'public' | 'private';
  backendMode?: 'proxy' | 'web';
  target?: string;
  webVolume?: { configMap?: string; persistentVolumeClaim?: string };
  oauth?: { provider?: string; emailAddressPatterns?: string[]; checkInterval?: string };
  token?: string;
}

export interface ShareStatus {
  token?: string;
  frontendEndpoints?: string[];
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface Share extends KubeObject {
  spec?: ShareSpec;
  status?: ShareStatus;
}

export interface AccessSpec {
  shareToken?: string;
  bindPort?: number;
}

export interface AccessStatus {
  frontendToken?: string;
  endpoint?: string;
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface Access extends KubeObject {
  spec?: AccessSpec;
  status?: AccessStatus;
}

/** A resource type: where its objects live in the API. */
export interface Resource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

/**
 * The resources of one API group version, by kind. Plurals follow Kubernetes' default rule (lower
 * case, `es` after a final `s`, else `s`), which every kind here uses.
 */
function kinds<const K extends readonly string[]>(groupVersion: string, ...names: K): { [I in keyof K]: Resource } {
  const [group, version] = groupVersion.includes('/') ? groupVersion.split('/') : ['', groupVersion];
  return names.map((kind) => {
    const lower = kind.toLowerCase();
    return { group, version, kind, plural: lower.endsWith('s') ? `${lower}es` : `${lower}s` };
  }) as { [I in keyof K]: Resource };
}

export const [SHARES, ACCESSES, AGENT_ENROLLMENTS] = kinds('svc.dev/v1alpha1', 'Share', 'Access', 'AgentEnrollment');
export const [SERVICES, SECRETS, SERVICE_ACCOUNTS] = kinds('v1', 'Service', 'Secret', 'ServiceAccount');
export const [EVENTS, PODS] = kinds('v1', 'Event', 'Pod');
export const [DEPLOYMENTS] = kinds('apps/v1', 'Deployment');
export const [INGRESSES] = kinds('networking.k8s.io/v1', 'Ingress');
export const [HTTP_ROUTES] = kinds('gateway.networking.k8s.io/v1', 'HTTPRoute');
export const [ROLES, ROLE_BINDINGS] = kinds('rbac.authorization.k8s.io/v1', 'Role', 'RoleBinding');
export const [LEASES] = kinds('coordination.k8s.io/v1', 'Lease');

export function apiVersion(r: Resource): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** Path of a collection (namespace undefined = all namespaces) or, with a name, of one object. */
export function resourcePath(r: Resource, namespace?: string, name?: string, subresource?: string): string {
  const root = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const one = name ? `/${encodeURIComponent(name)}` : '';
  const sub = name && subresource ? `/${subresource}` : '';
  return `${root}${ns}/${r.plural}${one}${sub}`;
}

export function objectPath(
  r: Resource,
  obj: { metadata: { name: string; namespace?: string } },
  subresource?: string,
): string {
  return resourcePath(r, obj.metadata.namespace, obj.metadata.name, subresource);
}

/** The work-queue key of an object: `namespace/name`. */
export function objectKey(obj: { metadata: { name: string; namespace?: string } }): string {
  return `${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Labels on every child the operator creates; the child watches select on the first one. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'svc-operator';
/**
 * Ready=False reasons of a Share or Access whose children are applied but do not serve yet (a
 * Deployment starting, an image that cannot be pulled, an Ingress not admitted): the operator has
 * accepted the spec, unlike a refusal such as `InvalidSpec`.
 */
export const NOT_SERVING_REASONS: ReadonlySet<string> = new Set([
  'DeploymentUnavailable',
  'ImagePullFailed',
  'ContainerCrashing',
  'ContainerConfigError',
  'Unschedulable',
  'IngressPending',
  'RoutePending',
  'RouteNotAccepted',
] satisfies ConditionReason[]);

export const SHARE_LABEL = 'svc.dev/share';
export const ACCESS_LABEL = 'svc.dev/access';

export function ownerReference(r: Resource, owner: KubeObject): OwnerReference {
  return {
    apiVersion: apiVersion(r),
    kind: r.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}
