import type { Logger } from '../lib/logger.ts';
import type { BackoffPolicy } from './backoff.ts';
import { Informer, apiSource } from '../lib/kube/informer.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { OperatorMetrics } from './metrics.ts';
import { cacheTrim } from './cache-trim.ts';
import type { AgentEnrollment } from './enrollment-children.ts';
import {
  ACCESSES,
  AGENT_ENROLLMENTS,
  DEPLOYMENTS,
  HTTP_ROUTES,
  INGRESSES,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SECRETS,
  SERVICES,
  SHARES,
  resourcePath,
  type Access,
  type KubeObject,
  type Resource,
  type Share,
} from '../lib/kube/resources.ts';

/**
 * The informer caches the reconcilers read (level-based: they never act on watch event types).
 * Each stores only the fields operator/cache-trim.ts keeps for its kind; a reader that needs
 * another field adds it there. The readers: share-, access-, enrollment- and auth-config-reconciler,
 * apply.ts (children against their desired state), readiness.ts and status.ts (Deployment and
 * Ingress status), watches.ts (generation, labels, owner references), events.ts, share-memo.ts,
 * share-tokens.ts and frontend-secret-state.ts (the frontend Secret's data).
 */
export interface Caches {
  readonly shares: Informer<Share>;
  readonly accesses: Informer<Access>;
  readonly enrollments: Informer<AgentEnrollment>;
  /** Children: only objects labelled as managed by the operator. */
  readonly deployments: Informer;
  readonly services: Informer;
  readonly ingresses: Informer;
  readonly secrets: Informer;
  /**
   * Share HTTPRoutes, only when share hosts are served through a Gateway. Not among the informers
   * readiness and liveness wait for: without the Gateway API CRDs it never syncs, and the share
   * reconciler then reports that on each public Share instead (operator/share-reconciler.ts).
   */
  readonly httpRoutes?: Informer;
  /** The installation's frontend Secret (one object, possibly in another namespace). */
  readonly frontendSecret: Informer;
  /**
   * The auth endpoint's config Secret and its shards, in its own namespace whatever namespaces the
   * operator watches: a deleted one is written again at once (operator/auth-config-reconciler.ts).
   */
  readonly authSecrets: Informer;
}

export interface CacheOptions {
  readonly client: KubeClient;
  readonly logger: Logger;
  readonly metrics: OperatorMetrics;
  /** The watched namespace; undefined watches all. */
  readonly namespace: string | undefined;
  readonly frontendSecret: { readonly namespace: string; readonly name: string };
  /** The namespace of the auth endpoint's Secrets; the frontend Secret's if absent. */
  readonly authNamespace?: string;
  readonly watchBackoff?: BackoffPolicy;
  readonly watchTimeoutSeconds?: number;
  readonly watchIdleMs?: number;
  /** Watch share HTTPRoutes (`--share-http-route`). */
  readonly httpRoutes?: boolean;
  /**
   * Cache whole objects instead of the trimmed ones; default from `SVC_OPERATOR_CACHE_WHOLE_OBJECTS=1`,
   * which only `bench:operator --compare-whole` sets, to measure what the trim saves.
   */
  readonly wholeObjects?: boolean;
}

const COMPONENT_LABEL = 'app.kubernetes.io/component';
/** The `app.kubernetes.io/component` of the auth endpoint's config Secret and of its shards. */
export const AUTH_COMPONENTS = ['auth-frontend', 'auth-shares'] as const;

/** One informer per kind the operator reads; none started yet. */
export function createCaches(options: CacheOptions): Caches {
  const { client, logger, metrics } = options;
  const whole = options.wholeObjects ?? process.env.SVC_OPERATOR_CACHE_WHOLE_OBJECTS === '1';
  const informer = <T extends KubeObject>(
    resource: Resource,
    selectors: { labelSelector?: string; fieldSelector?: string } = {},
    namespace = options.namespace,
  ): Informer<T> => {
    const transform = whole ? undefined : cacheTrim(resource);
    return new Informer<T>({
      name: resource.plural,
      source: apiSource(client, resourcePath(resource, namespace)),
      logger,
      ...selectors,
      ...(options.watchBackoff ? { backoff: options.watchBackoff } : {}),
      ...(options.watchTimeoutSeconds ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
      ...(options.watchIdleMs ? { watchIdleMs: options.watchIdleMs } : {}),
      ...(transform ? { transform } : {}),
      onRestart: (reason) => metrics.watchRestarts.inc({ resource: resource.plural, reason }),
    });
  };
  const managed = { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` };
  return {
    shares: informer<Share>(SHARES),
    accesses: informer<Access>(ACCESSES),
    enrollments: informer<AgentEnrollment>(AGENT_ENROLLMENTS),
    deployments: informer(DEPLOYMENTS, managed),
    services: informer(SERVICES, managed),
    ingresses: informer(INGRESSES, managed),
    secrets: informer(SECRETS, managed),
    ...(options.httpRoutes ? { httpRoutes: informer(HTTP_ROUTES, managed) } : {}),
    frontendSecret: informer(
      SECRETS,
      { fieldSelector: `metadata.name=${options.frontendSecret.name}` },
      options.frontendSecret.namespace,
    ),
    authSecrets: informer(
      SECRETS,
      { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY},${COMPONENT_LABEL} in (${AUTH_COMPONENTS.join(',')})` },
      options.authNamespace ?? options.frontendSecret.namespace,
    ),
  };
}

/** The informers the operator waits for (readiness) and watches for stalls (liveness): all but `httpRoutes`. */
export function allInformers(caches: Caches): Informer[] {
  const { httpRoutes: _optional, ...required } = caches;
  return Object.values(required);
}
