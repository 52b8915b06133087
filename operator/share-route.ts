/**
 * Gateway API HTTPRoutes for share hosts, the alternative to share Ingresses (docs/kubernetes.md,
 * "Gateway API"): with `--share-http-route` each public Share gets a
 * `gateway.networking.k8s.io/v1` HTTPRoute for `<token>.<shareDomain>`, attached to the configured
 * Gateways, instead of an Ingress. TLS then ends at the Gateway's listener, which the operator
 * neither writes nor reads: the `TLS` condition says what the installation declared.
 */
import type { ConditionInput } from './conditions.ts';
import type { NotServing } from './readiness.ts';
import { errorText, problem, type Problem } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { KubeApiError, type KubeClient } from '../lib/kube/client.ts';
import {
  HTTP_ROUTES,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  resourcePath,
  type Condition,
  type KubeObject,
} from '../lib/kube/resources.ts';
import { deleteChild } from './apply.ts';
import { findCondition } from './conditions.ts';

/** A Gateway an HTTPRoute attaches to (the Gateway API's ParentReference, the fields the operator passes on). */
export interface ParentRef {
  readonly name: string;
  readonly namespace?: string;
  readonly sectionName?: string;
  readonly port?: number;
  readonly group?: string;
  readonly kind?: string;
}

/** Validated `--share-http-route`. */
export interface ShareRouteOptions {
  readonly parentRefs: readonly ParentRef[];
  readonly annotations: Readonly<Record<string, string>>;
  /** `gateway`: the Gateway's listener for share hosts terminates TLS (URLs are https); `none`: http. */
  readonly tls: 'gateway' | 'none';
}

const FLAG = '--share-http-route';
const KNOWN = ['parentRefs', 'annotations', 'tls'];
const REF_KEYS = ['name', 'namespace', 'sectionName', 'port', 'group', 'kind'];
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$/;

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One parent reference, or undefined after adding its problems. */
function parentRef(value: unknown, at: string, problems: Problem[]): ParentRef | undefined {
  const bad = (path: string, message: string): undefined => void problems.push(problem(`${at}${path}`, message));
  if (!isObject(value)) return bad('', `must be a mapping with at least name, got ${JSON.stringify(value)}`);
  for (const key of Object.keys(value))
    if (!REF_KEYS.includes(key)) return bad(`.${key}`, `unknown field (known: ${REF_KEYS.join(', ')})`);
  const { name, namespace, sectionName, port, group, kind } = value;
  if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name)) return bad('.name', 'must be a Gateway name');
  if (namespace !== undefined && (typeof namespace !== 'string' || !DNS_LABEL.test(namespace)))
    return bad('.namespace', `must be a namespace name, got ${JSON.stringify(namespace)}`);
  if (sectionName !== undefined && (typeof sectionName !== 'string' || !DNS_SUBDOMAIN.test(sectionName)))
    return bad('.sectionName', `must be a listener name, got ${JSON.stringify(sectionName)}`);
  if (port !== undefined && (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535))
    return bad('.port', `must be a port 1-65535, got ${JSON.stringify(port)}`);
  if (group !== undefined && (typeof group !== 'string' || (group !== '' && !DNS_SUBDOMAIN.test(group))))
    return bad('.group', `must be an API group, got ${JSON.stringify(group)}`);
  if (kind !== undefined && (typeof kind !== 'string' || !KIND.test(kind)))
    return bad('.kind', `must be a kind, got ${JSON.stringify(kind)}`);
  return value as unknown as ParentRef;
}

/**
 * Parses `--share-http-route` (JSON `{parentRefs: [...], annotations: {...}, tls: gateway|none}`),
 * adding every problem to `problems`. Undefined when the flag is absent (share Ingresses).
 */
export function parseShareRoute(text: string | undefined, problems: Problem[]): ShareRouteOptions | undefined {
  if (text === undefined || !text.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    problems.push(problem(FLAG, `must be a JSON object: ${err instanceof Error ? err.message : String(err)}`));
    return undefined;
  }
  if (!isObject(value)) {
    problems.push(problem(FLAG, `must be a JSON object, got ${JSON.stringify(value)}`));
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(value))
    if (!KNOWN.includes(key))
      problems.push(problem(`${FLAG}: ${key}`, `unknown field (known: ${KNOWN.join(', ')})`, 'unknown_field'));
  const refs = Array.isArray(value.parentRefs) ? value.parentRefs : [];
  if (refs.length === 0)
    problems.push(problem(`${FLAG}: parentRefs`, 'must list at least one Gateway to attach share routes to'));
  const parentRefs = refs.map((r, i) => parentRef(r, `${FLAG}: parentRefs[${i}]`, problems));
  const annotations: Record<string, string> = {};
  const given = value.annotations ?? {};
  if (!isObject(given) || Object.values(given).some((v) => typeof v !== 'string'))
    problems.push(problem(`${FLAG}: annotations`, 'must be a mapping of names to strings'));
  else Object.assign(annotations, given);
  const tls = value.tls ?? 'none';
  if (tls !== 'gateway' && tls !== 'none')
    problems.push(problem(`${FLAG}: tls`, `must be gateway or none, got ${JSON.stringify(tls)}`));
  if (problems.length > before) return undefined;
  return { parentRefs: parentRefs as ParentRef[], annotations, tls: tls as 'gateway' | 'none' };
}

/** The HTTPRoute of a public share: its one host, every path to the share's Service on port 80. */
export function desiredShareRoute(
  metadata: KubeObject['metadata'],
  host: string,
  serviceName: string,
  options: ShareRouteOptions,
): KubeObject {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: {
      ...metadata,
      ...(Object.keys(options.annotations).length > 0 ? { annotations: { ...options.annotations } } : {}),
    },
    spec: {
      parentRefs: options.parentRefs.map((r) => ({ ...r })),
      hostnames: [host],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ name: serviceName, port: 80 }],
        },
      ],
    },
  };
}

interface RouteParentStatus {
  parentRef?: ParentRef;
  controllerName?: string;
  conditions?: Condition[];
}

/** Whether a parent in a route's status is the configured `ref` (defaults as the Gateway API sets them). */
function sameParent(status: ParentRef | undefined, ref: ParentRef, routeNamespace: string): boolean {
  if (!status) return false;
  return (
    status.name === ref.name &&
    (status.namespace ?? routeNamespace) === (ref.namespace ?? routeNamespace) &&
    (status.sectionName ?? '') === (ref.sectionName ?? '') &&
    (status.port ?? 0) === (ref.port ?? 0) &&
    (status.group ?? 'gateway.networking.k8s.io') === (ref.group ?? 'gateway.networking.k8s.io') &&
    (status.kind ?? 'Gateway') === (ref.kind ?? 'Gateway')
  );
}

/**
 * Whether the route serves: for every configured parent, a Gateway controller reports it in
 * `status.parents` with `Accepted=True`. A parent reported with `Accepted=False` is a problem (the
 * controller's reason and message, e.g. `NotAllowedByListeners`); one not reported yet is a wait.
 */
export function routeNotServing(
  route: KubeObject | undefined,
  name: string,
  refs: readonly ParentRef[],
): NotServing | undefined {
  const namespace = route?.metadata.namespace ?? '';
  const parents = (route?.status as { parents?: RouteParentStatus[] } | undefined)?.parents ?? [];
  for (const ref of refs) {
    const reported = parents.find((p) => sameParent(p.parentRef, ref, namespace));
    const accepted = findCondition(reported?.conditions, 'Accepted');
    const gateway = `Gateway ${ref.namespace ?? namespace}/${ref.name}${ref.sectionName ? ` (${ref.sectionName})` : ''}`;
    if (accepted?.status === 'True') continue;
    if (accepted?.status === 'False')
      return {
        reason: 'RouteNotAccepted',
        message:
          `HTTPRoute ${name} is not accepted by ${gateway}: ${accepted.reason}${accepted.message ? `: ${accepted.message}` : ''}`.slice(
            0,
            400,
          ),
        problem: true,
      };
    return {
      reason: 'RoutePending',
      message: `HTTPRoute ${name} is not accepted by ${gateway} yet (no Gateway controller reported it)`,
      problem: false,
    };
  }
  return undefined;
}

/** The `TLS` condition of a public Share served through an HTTPRoute. */
export function routeTlsCondition(options: ShareRouteOptions): ConditionInput {
  if (options.tls === 'none')
    return {
      type: 'TLS',
      status: 'False',
      reason: 'TLSNotConfigured',
      message:
        'TLS is not configured for share hosts (operator.shareHttpRoute.tls none): the share is served over http',
    };
  return {
    type: 'TLS',
    status: 'True',
    reason: 'TLSConfigured',
    message:
      "TLS is terminated at the Gateway's listener the HTTPRoute attaches to (operator.shareHttpRoute.tls gateway; the operator does not read the Gateway)",
  };
}

/**
 * With share Ingresses (no `--share-http-route`): deletes the share HTTPRoutes an earlier
 * configuration left (labelled as the operator's), once, when this replica starts leading. The
 * Shares' reconciles write their Ingresses meanwhile. Without the Gateway API CRDs, or without the
 * right to list HTTPRoutes (the chart grants it only with operator.shareHttpRoute.enabled), there
 * is nothing the operator can remove: that is logged, and the routes stay until deleted by hand.
 */
export async function removeShareRoutes(
  client: KubeClient,
  logger: Logger,
  namespace: string | undefined,
): Promise<number> {
  let removed = 0;
  try {
    const { items } = await client.list(resourcePath(HTTP_ROUTES, namespace), {
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
    });
    for (const route of items) {
      await deleteChild(client, HTTP_ROUTES, route);
      removed++;
    }
    if (removed > 0) logger.info({ removed }, 'removed share HTTPRoutes: share hosts are served by Ingresses');
  } catch (err) {
    const answered = err instanceof KubeApiError && (err.status === 404 || err.status === 403);
    logger[answered ? 'debug' : 'warn'](`share HTTPRoutes not removed: ${errorText(err)}`);
  }
  return removed;
}
