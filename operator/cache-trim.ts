import { apiVersion, type Condition, type KubeObject, type ObjectMeta, type Resource } from '../lib/kube/resources.ts';

/** kubectl's copy of the whole object it last applied: as large as the spec, and read by nobody here. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * The metadata the operator reads: identity and version (keys, Events, optimistic writes), the
 * generation and deletion (what needs a reconcile), labels and annotations (compared with what it
 * applies), owner references (which Share or Access a child wakes) and finalizers. Left out:
 * `managedFields` (a second copy of every field's path, per field manager), `selfLink`,
 * `generateName`, `deletionGracePeriodSeconds`.
 */
const METADATA_KEYS = [
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
] as const satisfies readonly (keyof ObjectMeta)[];

type Trim = (obj: KubeObject) => KubeObject;

/** The kept metadata fields, without kubectl's last-applied annotation. */
export function trimMetadata(metadata: ObjectMeta): ObjectMeta {
  const out: Record<string, unknown> = {};
  for (const key of METADATA_KEYS) if (metadata[key] !== undefined) out[key] = metadata[key];
  const annotations = metadata.annotations;
  if (annotations && LAST_APPLIED_ANNOTATION in annotations) {
    const { [LAST_APPLIED_ANNOTATION]: _dropped, ...rest } = annotations;
    if (Object.keys(rest).length > 0) out.annotations = rest;
    else delete out.annotations;
  }
  return out as unknown as ObjectMeta;
}

/** The trimmed metadata and the named top-level fields as they are. */
function keep(...fields: string[]): Trim {
  return (obj) => {
    const out: KubeObject = { metadata: trimMetadata(obj.metadata) };
    for (const field of fields) if (obj[field] !== undefined) out[field] = obj[field];
    return out;
  };
}

/** A condition as readiness reads it (operator/readiness.ts, status.ts): no timestamps. */
function condition(c: Condition): Partial<Condition> {
  const { type, status, reason, message } = c;
  return { type, status, reason, message };
}

/**
 * A Deployment: its spec whole (the operator skips an apply when the live object contains every
 * desired field, operator/apply.ts), and of its status what decides Ready and Available.
 */
function trimDeployment(obj: KubeObject): KubeObject {
  const out = keep('spec')(obj);
  const status = obj.status as
    { observedGeneration?: number; availableReplicas?: number; conditions?: Condition[] } | undefined;
  if (status) {
    const { observedGeneration, availableReplicas, conditions } = status;
    out.status = { observedGeneration, availableReplicas, conditions: conditions?.map(condition) };
  }
  return out;
}

/** An Ingress: its spec, and whether its controller wrote an address (operator/readiness.ts). */
function trimIngress(obj: KubeObject): KubeObject {
  const out = keep('spec')(obj);
  const loadBalancer = (obj.status as { loadBalancer?: unknown } | undefined)?.loadBalancer;
  if (loadBalancer !== undefined) out.status = { loadBalancer };
  return out;
}

/** An HTTPRoute: its spec, and which Gateways accepted it (operator/share-route.ts). */
function trimRoute(obj: KubeObject): KubeObject {
  const out = keep('spec')(obj);
  const parents = (obj.status as { parents?: { parentRef?: unknown; conditions?: Condition[] }[] } | undefined)
    ?.parents;
  if (parents)
    out.status = {
      parents: parents.map((p) => ({ parentRef: p.parentRef, conditions: p.conditions?.map(condition) })),
    };
  return out;
}

const TRIMS: Readonly<Record<string, Trim>> = {
  Share: keep('spec', 'status'),
  Access: keep('spec', 'status'),
  AgentEnrollment: keep('spec', 'status'),
  Deployment: trimDeployment,
  Service: keep('spec'),
  Ingress: trimIngress,
  HTTPRoute: trimRoute,
  Secret: keep('type', 'data', 'immutable'),
};

/**
 * What the operator's informer of `resource` stores of each object: the fields its reconcilers
 * read (every reader of `Caches` is listed in operator/caches.ts), nothing else. At thousands of
 * Shares the caches are most of the operator's memory, and the dropped parts (managedFields above
 * all, written by every field manager including the operator's own server-side applies) are most
 * of each object. A kind without a trim here is cached whole.
 *
 * `apiVersion` and `kind` are set from `resource`: the items of a list of a built-in kind come
 * without them, and a cached child lacking them would never contain its desired state, so every
 * child would be applied again after each start or relist.
 */
export function cacheTrim(resource: Resource): Trim | undefined {
  const trim = TRIMS[resource.kind];
  if (!trim) return undefined;
  const version = apiVersion(resource);
  return (obj) => ({ apiVersion: version, kind: resource.kind, ...trim(obj) });
}
