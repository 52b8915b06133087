/**
 * Settings of the pods the operator writes (share, access and environment-agent pods), set once per
 * installation: the chart's `operator.sharePods` values, passed as JSON in `--pod-settings`
 * (docs/kubernetes.md, "Share pod settings"). They let share pods pull from a private registry and
 * run on a restricted node pool; what makes a pod safe (security contexts, no ServiceAccount token,
 * the image) is never taken from them.
 */
import { problem, type Problem } from '../lib/errors.ts';
import type { KubeObject } from '../lib/kube/resources.ts';

/** Validated pod settings; every field optional (absent = the operator's default). */
export interface PodSettings {
  readonly imagePullSecrets?: readonly { name: string }[];
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Replaces the operator's default container resources on every container of the pod. */
  readonly resources?: Readonly<Record<string, unknown>>;
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly tolerations?: readonly Record<string, unknown>[];
  readonly affinity?: Readonly<Record<string, unknown>>;
  readonly priorityClassName?: string;
  /** Added to the pod template; the operator's own labels win (and may not be named here). */
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

const FLAG = '--pod-settings';
const KNOWN = [
  'imagePullSecrets',
  'imagePullPolicy',
  'resources',
  'nodeSelector',
  'tolerations',
  'affinity',
  'priorityClassName',
  'labels',
  'annotations',
];
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'];
const TOLERATION_KEYS = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'];
const AFFINITY_KEYS = ['nodeAffinity', 'podAffinity', 'podAntiAffinity'];
const RESOURCE_KEYS = ['requests', 'limits'];
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label or annotation key: optional DNS-subdomain prefix and a name of at most 63 characters. */
const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const QUANTITY = /^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i?|[numkMGTPE])?$/;
/** Labels the operator sets on its pods (selectors, ownership): a setting may not override them. */
const RESERVED_LABEL = /^(app\.kubernetes\.io\/(managed-by|name|component)|svc\.dev\/.*)$/;

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Records a problem at a field path under `--pod-settings`. */
type Bad = (path: string, message: string) => void;

/**
 * Parses and checks `--pod-settings` (a JSON object; empty = none), adding every problem with its
 * field path to `problems`. Tolerations and affinity are checked for their shape; the API server
 * checks the rest of them when the operator writes a Deployment.
 */
export function parsePodSettings(text: string | undefined, problems: Problem[]): PodSettings {
  const value = jsonObject(text, problems);
  if (!value) return {};
  const bad: Bad = (path, message) => void problems.push(problem(`${FLAG}: ${path}`, message));
  for (const key of Object.keys(value))
    if (!KNOWN.includes(key))
      problems.push(problem(`${FLAG}: ${key}`, `unknown field (known: ${KNOWN.join(', ')})`, 'unknown_field'));
  const settings: PodSettings = {
    imagePullSecrets: pullSecrets(value.imagePullSecrets, bad),
    imagePullPolicy: pullPolicy(value.imagePullPolicy, bad),
    resources: resources(value.resources, bad),
    nodeSelector: stringMap(value.nodeSelector, 'nodeSelector', bad, false),
    tolerations: tolerations(value.tolerations, bad),
    affinity: affinity(value.affinity, bad),
    priorityClassName: priorityClassName(value.priorityClassName, bad),
    labels: podLabels(value.labels, bad),
    annotations: stringMap(value.annotations, 'annotations', bad, false),
  };
  return Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined));
}

/** The flag's JSON object; undefined when empty, or not a JSON object (a problem then). */
function jsonObject(text: string | undefined, problems: Problem[]): Obj | undefined {
  if (!text || !text.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    problems.push(problem(FLAG, `must be a JSON object: ${err instanceof Error ? err.message : String(err)}`));
    return undefined;
  }
  if (isObject(value)) return value;
  problems.push(problem(FLAG, `must be a JSON object, got ${JSON.stringify(value)}`));
  return undefined;
}

/** `imagePullSecrets`: a list of `{name: <Secret name>}`. */
function pullSecrets(secrets: unknown, bad: Bad): PodSettings['imagePullSecrets'] {
  if (secrets === undefined) return undefined;
  if (!Array.isArray(secrets)) {
    bad('imagePullSecrets', 'must be a list of {name: <Secret>}');
    return undefined;
  }
  const names: { name: string }[] = [];
  secrets.forEach((s: unknown, i) => {
    const name = isObject(s) ? s.name : undefined;
    if (
      !isObject(s) ||
      Object.keys(s).some((k) => k !== 'name') ||
      typeof name !== 'string' ||
      !DNS_SUBDOMAIN.test(name)
    )
      bad(`imagePullSecrets[${i}]`, `must be {name: <Secret name>}, got ${JSON.stringify(s)}`);
    else names.push({ name });
  });
  return names.length > 0 ? names : undefined;
}

/** `imagePullPolicy`: Always, IfNotPresent or Never ('' = the default). */
function pullPolicy(policy: unknown, bad: Bad): PodSettings['imagePullPolicy'] {
  if (policy === undefined || policy === '') return undefined;
  if (typeof policy === 'string' && PULL_POLICIES.includes(policy)) return policy as PodSettings['imagePullPolicy'];
  bad('imagePullPolicy', `must be one of ${PULL_POLICIES.join(', ')}, got ${JSON.stringify(policy)}`);
  return undefined;
}

/** `resources`: requests and limits, each a mapping of resource name to quantity. */
function resources(value: unknown, bad: Bad): PodSettings['resources'] {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    bad('resources', 'must be a mapping of requests and limits');
    return undefined;
  }
  if (Object.keys(value).length === 0) return undefined;
  for (const [part, amounts] of Object.entries(value)) {
    if (!RESOURCE_KEYS.includes(part)) bad(`resources.${part}`, 'unknown field (known: requests, limits)');
    else if (!isObject(amounts)) bad(`resources.${part}`, 'must be a mapping of resource name to quantity');
    else
      for (const [resource, amount] of Object.entries(amounts))
        if (!(typeof amount === 'string' || typeof amount === 'number') || !QUANTITY.test(String(amount)))
          bad(
            `resources.${part}.${resource}`,
            `must be a quantity such as 100m or 128Mi, got ${JSON.stringify(amount)}`,
          );
  }
  return value;
}

/** `tolerations`: a list of mappings with the fields of a Kubernetes toleration. */
function tolerations(value: unknown, bad: Bad): PodSettings['tolerations'] {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    bad('tolerations', 'must be a list of tolerations');
    return undefined;
  }
  value.forEach((t: unknown, i) => {
    if (!isObject(t)) bad(`tolerations[${i}]`, 'must be a mapping');
    else
      for (const key of Object.keys(t))
        if (!TOLERATION_KEYS.includes(key))
          bad(`tolerations[${i}].${key}`, `unknown field (known: ${TOLERATION_KEYS.join(', ')})`);
  });
  return value.length > 0 ? (value as Obj[]) : undefined;
}

/** `affinity`: node affinity, pod affinity and pod anti-affinity. */
function affinity(value: unknown, bad: Bad): PodSettings['affinity'] {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    bad('affinity', 'must be a mapping');
    return undefined;
  }
  for (const key of Object.keys(value))
    if (!AFFINITY_KEYS.includes(key)) bad(`affinity.${key}`, `unknown field (known: ${AFFINITY_KEYS.join(', ')})`);
  return Object.keys(value).length > 0 ? value : undefined;
}

/** `priorityClassName`: a PriorityClass name ('' = none). */
function priorityClassName(priority: unknown, bad: Bad): string | undefined {
  if (priority === undefined || priority === '') return undefined;
  if (typeof priority === 'string' && DNS_SUBDOMAIN.test(priority) && priority.length <= 253) return priority;
  bad('priorityClassName', `must be a PriorityClass name, got ${JSON.stringify(priority)}`);
  return undefined;
}

/** `labels` of the pod template; never one the operator sets itself (selectors and ownership). */
function podLabels(value: unknown, bad: Bad): PodSettings['labels'] {
  const labels = stringMap(value, 'labels', bad, true);
  for (const key of Object.keys(labels ?? {}))
    if (RESERVED_LABEL.test(key)) bad(`labels.${key}`, 'is set by the operator itself (selectors and ownership)');
  return labels;
}

/** A mapping of qualified names to strings (label values checked as such when `labelValues`). */
function stringMap(value: unknown, path: string, bad: Bad, labelValues: boolean): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    bad(path, 'must be a mapping of names to strings');
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const [key, v] of Object.entries(value)) {
    if (!QUALIFIED_NAME.test(key))
      bad(`${path}.${key}`, 'is not a valid key (optional DNS prefix/, then a name of at most 63 characters)');
    else if (typeof v !== 'string') bad(`${path}.${key}`, `must be a string, got ${JSON.stringify(v)}`);
    else if (labelValues && !LABEL_VALUE.test(v))
      bad(`${path}.${key}`, `is not a valid label value: ${JSON.stringify(v)}`);
    else out[key] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The Deployment with the settings applied to its pod template: scheduling fields and pull secrets
 * on the pod, pull policy and resources on each container, labels and annotations merged under the
 * operator's own (which win). Returns the Deployment unchanged when there are no settings.
 */
export function applyPodSettings(deployment: KubeObject, settings: PodSettings | undefined): KubeObject {
  if (!settings || Object.keys(settings).length === 0) return deployment;
  const spec = deployment.spec as Obj;
  const template = spec.template as { metadata?: { labels?: Obj; annotations?: Obj }; spec: Obj };
  const podSpec = template.spec;
  const containers = (podSpec.containers as Obj[]).map((c) => ({
    ...c,
    ...(settings.imagePullPolicy ? { imagePullPolicy: settings.imagePullPolicy } : {}),
    ...(settings.resources ? { resources: settings.resources } : {}),
  }));
  const metadata = {
    ...template.metadata,
    ...(settings.labels ? { labels: { ...settings.labels, ...template.metadata?.labels } } : {}),
    ...(settings.annotations ? { annotations: { ...settings.annotations, ...template.metadata?.annotations } } : {}),
  };
  return {
    ...deployment,
    spec: {
      ...spec,
      template: {
        metadata,
        spec: {
          ...podSpec,
          containers,
          ...(settings.imagePullSecrets ? { imagePullSecrets: settings.imagePullSecrets } : {}),
          ...(settings.nodeSelector ? { nodeSelector: settings.nodeSelector } : {}),
          ...(settings.tolerations ? { tolerations: settings.tolerations } : {}),
          ...(settings.affinity ? { affinity: settings.affinity } : {}),
          ...(settings.priorityClassName ? { priorityClassName: settings.priorityClassName } : {}),
        },
      },
    },
  };
}
