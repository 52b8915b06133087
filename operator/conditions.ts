import type { Condition } from '../lib/kube/resources.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * Sets one condition in a metav1.Condition list: `lastTransitionTime` moves only when the status
 * changes (a new reason or message alone is not a transition), as apimachinery's
 * `meta.SetStatusCondition` does. Returns a new list; the input is not modified.
 */
export function setCondition(
  existing: readonly Condition[] | undefined,
  input: ConditionInput,
  generation: number | undefined,
  now: Date,
): Condition[] {
  const list = [...(existing ?? [])];
  const index = list.findIndex((c) => c.type === input.type);
  const previous = index >= 0 ? list[index] : undefined;
  const next: Condition = {
    ...input,
    lastTransitionTime:
      previous && previous.status === input.status
        ? previous.lastTransitionTime
        : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

/**
 * A status object for `obj`: the given fields, `observedGeneration`, and exactly the given
 * conditions (each set with setCondition, so unchanged ones keep their transition time).
 */
export function statusWith<F extends object>(
  obj: { metadata: { generation?: number }; status?: { conditions?: Condition[] } },
  fields: F,
  conditions: readonly ConditionInput[],
): F & { observedGeneration?: number; conditions: Condition[] } {
  const generation = obj.metadata.generation;
  let list = obj.status?.conditions;
  for (const c of conditions) list = setCondition(list, c, generation, new Date());
  const types = new Set(conditions.map((c) => c.type));
  return {
    ...fields,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions: (list ?? []).filter((c) => types.has(c.type)),
  };
}

export function findCondition(list: readonly Condition[] | undefined, type: string): Condition | undefined {
  return list?.find((c) => c.type === type);
}

/** Deep equality of JSON-like values, ignoring object key order (for "write status only when changed"). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return (
    ka.length === kb.length &&
    ka.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

/**
 * True when every field of `desired` is present with the same value in `actual` (arrays must have
 * the same length and match element-wise). The API server adds defaults to what the operator
 * applies, so "the live object already contains what we would apply" is the test for skipping a
 * server-side apply that would change nothing.
 */
export function containsDesired(actual: unknown, desired: unknown): boolean {
  if (desired === undefined) return true;
  if (typeof desired !== 'object' || desired === null) return actual === desired;
  if (typeof actual !== 'object' || actual === null) return false;
  if (Array.isArray(desired)) {
    return (
      Array.isArray(actual) &&
      actual.length === desired.length &&
      desired.every((v, i) => containsDesired(actual[i], v))
    );
  }
  if (Array.isArray(actual)) return false;
  return Object.entries(desired).every(([k, v]) => containsDesired((actual as Record<string, unknown>)[k], v));
}
