import { containsDesired, jsonEqual } from './conditions.ts';
import { isNotFound, type KubeClient } from '../lib/kube/client.ts';
import { apiVersion, objectPath, type KubeObject, type Resource } from '../lib/kube/resources.ts';

export type ApplyOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Server-side applies a child unless the cached live object already contains every desired field
 * (then the apply would be a no-op, and skipping it saves a request per child per reconcile).
 */
export async function applyChild(
  client: KubeClient,
  resource: Resource,
  desired: KubeObject,
  live: KubeObject | undefined,
): Promise<ApplyOutcome> {
  if (live && containsDesired(live, desired)) return 'unchanged';
  await client.apply(objectPath(resource, desired), desired);
  return live ? 'updated' : 'created';
}

/** Deletes a child that should no longer exist; already gone is fine. */
export async function deleteChild(client: KubeClient, resource: Resource, obj: KubeObject): Promise<void> {
  try {
    await client.delete(objectPath(resource, obj));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Writes `status` through the status subresource with server-side apply, only when it differs
 * from the live status. Returns whether a write happened.
 */
export async function writeStatus(
  client: KubeClient,
  resource: Resource,
  obj: KubeObject,
  current: unknown,
  status: object,
): Promise<boolean> {
  if (jsonEqual(current ?? {}, status)) return false;
  await client.apply(objectPath(resource, obj, 'status'), {
    apiVersion: apiVersion(resource),
    kind: resource.kind,
    metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace },
    status,
  });
  return true;
}
