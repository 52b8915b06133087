import type { Clock } from '../lib/clock.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import type { BackendPipe } from '../lib/http-pipe.ts';
import type { HealthRoutes, Readiness } from '../lib/health.ts';
import type { Logger } from '../lib/logger.ts';
import type { ShareSource } from '../lib/share/source.ts';
import { BackendCookies } from '../lib/backend-cookies.ts';
import { Authenticator } from './auth.ts';
import type { FrontendLimits } from './connections.ts';
import type { Routing } from './host-routing.ts';
import type { FrontendMetrics } from './metrics.ts';
import { ProviderReadiness } from './provider-readiness.ts';
import { createShareProxy } from './proxy.ts';
import type { SharedState } from './shared-state.ts';
import type { ShareHandlerDeps } from './share-handler.ts';
import { UploadGate } from './upload-gate.ts';

/** What the frontend's parts are built from, once the public URL is known. */
export interface FrontendPartsOptions {
  readonly endpointUrl: URL;
  readonly domain: string;
  readonly oauth?: OAuthConfig;
  readonly shares: ShareSource;
  readonly limits: FrontendLimits;
  readonly metrics: FrontendMetrics;
  readonly log: Logger;
  readonly clock?: Clock;
  readonly sharedState?: SharedState;
  /** A further readiness condition for `/readyz`, next to the identity providers'. */
  readonly ready?: () => Readiness;
}

/**
 * The pieces the frontend's routes share: the authenticator (when OAuth is configured), the proxy to
 * share backends, the per-share backend cookie jars, readiness and host routing.
 */
export interface FrontendParts {
  readonly endpointUrl: URL;
  readonly auth: Authenticator | undefined;
  readonly cookieName: string | undefined;
  readonly cookies: BackendCookies;
  readonly proxy: BackendPipe;
  /** What serveShare and upgradeShare need (sidecar/share-handler.ts). */
  readonly deps: ShareHandlerDeps;
  readonly readiness: ProviderReadiness;
  readonly health: HealthRoutes;
  readonly routing: Routing;
  readonly metrics: FrontendMetrics;
  readonly log: Logger;
}

/** Builds the frontend's shared pieces; `readiness` and `proxy` are the ones to stop on close. */
export function buildFrontendParts(options: FrontendPartsOptions): FrontendParts {
  const { endpointUrl, domain, shares, limits, metrics, log } = options;
  const auth = options.oauth
    ? new Authenticator(
        { ...options.oauth, endpointUrl },
        () => shares,
        metrics,
        log,
        options.clock,
        options.sharedState,
      )
    : undefined;
  const cookieName = options.oauth?.cookieName;
  const proxy = createShareProxy(metrics, limits.backendTimeoutMs);
  const cookies = new BackendCookies(cookieName, domain);
  const deps: ShareHandlerDeps = {
    auth,
    cookieName,
    cookies,
    endpointUrl,
    proxy,
    uploads: new UploadGate(limits),
    metrics,
    log,
  };
  const readiness = new ProviderReadiness(auth, log);
  const health: HealthRoutes = {
    ready: () => {
      const also = options.ready?.();
      if (also && !also.ok) return also;
      return { ok: readiness.isReady, detail: readiness.isReady ? 'ok' : 'identity providers not ready' };
    },
    onProbe: () => metrics.request('health'),
  };
  const routing = { endpointHost: endpointUrl.hostname, domain, shares };
  return { endpointUrl, auth, cookieName, cookies, proxy, deps, readiness, health, routing, metrics, log };
}
