import type { InformerHandlers } from '../lib/kube/informer.ts';
import { objectKey, type KubeObject } from '../lib/kube/resources.ts';

/** What a watch handler sees: the object after the change and, on updates, before it. */
export type Change<T extends KubeObject = KubeObject> =
  | { readonly type: 'added'; readonly object: T }
  | { readonly type: 'updated'; readonly object: T; readonly old: T }
  | { readonly type: 'deleted'; readonly object: T };

/** Where a watch gets its events and the objects it lists (an Informer). */
export interface WatchSource<T extends KubeObject = KubeObject> {
  on(handlers: InformerHandlers<T>): void;
  list(): T[];
}

/** Another kind whose changes wake the reconciler: the keys to reconcile for a change. */
export interface Watch<T extends KubeObject = KubeObject> {
  readonly source: WatchSource<T>;
  map(change: Change<T>): readonly string[];
  /** Enqueue after this long instead of now: a burst of changes becomes one reconcile. */
  readonly delayMs?: number;
}

/**
 * The watches that wake a reconciler, declared as controller-runtime's builder does:
 * - `for`: the primary kind. An added object, or an update that needs a reconcile (`needsReconcile`),
 *   enqueues its own key; every object is enqueued when this replica starts leading. Deletions are
 *   not enqueued: an object without a finalizer needs nothing once gone (its children carry
 *   ownerReferences), and one with a finalizer is updated with a deletionTimestamp first.
 * - `owns`: child kinds; a change of a child wakes the object of the reconciler's kind named by the
 *   child's controller ownerReference.
 * - `watches`: other kinds, each with a function mapping a change to the keys to reconcile.
 * - `keys`: fixed keys enqueued when this replica starts leading (a singleton reconciler's key).
 */
export interface Watches {
  readonly for?: WatchSource;
  readonly owns?: readonly WatchSource[];
  readonly watches?: readonly Watch[];
  readonly keys?: readonly string[];
}

/** What the wiring enqueues into: a controller's work queue. */
export interface Enqueue {
  add(key: string): void;
  addAfter(key: string, delayMs: number): void;
}

/**
 * Registers the handlers that turn a reconciler's `watches` into keys for `queue`. Level-based:
 * the change only decides which keys to look at, never what the reconciler does with them.
 */
export function wireWatches(reconciler: { readonly kind: string; readonly watches: Watches }, queue: Enqueue): void {
  const { kind, watches } = reconciler;
  if (watches.for) {
    watches.for.on({
      onAdd: (obj) => queue.add(objectKey(obj)),
      onUpdate: (old, obj) => {
        if (needsReconcile(old, obj)) queue.add(objectKey(obj));
      },
    });
  }
  const toOwner = (child: KubeObject): void => {
    const owner = ownedBy(child, kind);
    if (owner) queue.add(owner);
  };
  for (const source of watches.owns ?? []) {
    source.on({ onAdd: toOwner, onUpdate: (_old, child) => toOwner(child), onDelete: toOwner });
  }
  for (const watch of watches.watches ?? []) {
    const enqueue = (change: Change): void => {
      for (const key of watch.map(change)) {
        if (watch.delayMs === undefined) queue.add(key);
        else queue.addAfter(key, watch.delayMs);
      }
    };
    watch.source.on({
      onAdd: (object) => enqueue({ type: 'added', object }),
      onUpdate: (old, object) => enqueue({ type: 'updated', object, old }),
      onDelete: (object) => enqueue({ type: 'deleted', object }),
    });
  }
}

/** Every key the reconciler owns right now: enqueued when this replica starts leading. */
export function initialKeys(watches: Watches): string[] {
  return [...(watches.for?.list().map(objectKey) ?? []), ...(watches.keys ?? [])];
}

/**
 * Whether an update needs a reconcile: the spec (generation), deletion or labels changed, or the
 * status no longer reflects the generation. The operator's own status writes pass this filter
 * without a reconcile, so writing status cannot loop.
 */
export function needsReconcile(
  old: KubeObject,
  obj: KubeObject & { status?: { observedGeneration?: number } },
): boolean {
  return (
    old.metadata.generation !== obj.metadata.generation ||
    old.metadata.deletionTimestamp !== obj.metadata.deletionTimestamp ||
    JSON.stringify(old.metadata.labels ?? {}) !== JSON.stringify(obj.metadata.labels ?? {}) ||
    obj.status?.observedGeneration !== obj.metadata.generation
  );
}

/** The `namespace/name` key of the object of `kind` that controls `obj`, if any. */
function ownedBy(obj: KubeObject, kind: string): string | undefined {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === kind);
  return ref ? `${obj.metadata.namespace ?? ''}/${ref.name}` : undefined;
}
