import { stringify as toYaml } from 'yaml';
import type { Logger } from '../lib/logger.ts';
import type { Caches } from './caches.ts';
import type { ReconcileResult, Reconciler } from './controller.ts';
import { AUTH_INTERNAL_PORT, type Installation } from './installation.ts';
import type { InstallationView } from './installation-state.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { FRONTEND_CONFIG_FILE, FRONTEND_METRICS_PORT, FRONTEND_PORT } from './pod.ts';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SECRETS,
  resourcePath,
  type KubeObject,
  type Share,
} from '../lib/kube/resources.ts';
import { childName, shareEntry, type ValidShare } from './share-children.ts';
import { ShareMemo } from './share-memo.ts';
import type { Change, Watches } from './watches.ts';

/** The single work-queue key of the auth-endpoint config. */
export const AUTH_CONFIG_KEY = '/auth-frontend';
/**
 * OAuth share changes reach the auth config at most once a second: a burst of new shares is one
 * apply (each run renders every OAuth share's entry). The auth endpoint sees a new Secret only when
 * the kubelet next syncs its volume (up to a minute), so a second here is not noticeable.
 */
const SHARE_BURST_MS = 1000;

/**
 * The config of the installation's auth endpoint (`<release>-auth` Deployment running `svc
 * frontend`, serving `endpoint_url`'s host: OAuth callbacks and logout): the installation's
 * `oauth:` section plus every valid OAuth share, targeting the share's in-cluster Service.
 */
function authFrontendConfig(installation: Installation, shares: readonly ValidShare[]): Record<string, unknown> {
  const entries = shares
    .filter((s) => s.oauth)
    .sort((a, b) => a.token.localeCompare(b.token))
    .map((s) => shareEntry(s, `http://${childName(s.name)}.${s.namespace}.svc:80`));
  // The listeners are the pod's, whatever an existing Secret says (as for the per-share sidecars):
  // the public one, and the internal one share pods ask (its own ClusterIP Service, no Ingress).
  return {
    oauth: {
      ...installation.section,
      bind_address: `0.0.0.0:${FRONTEND_PORT}`,
      internal_address: `0.0.0.0:${AUTH_INTERNAL_PORT}`,
    },
    shares: entries,
    metrics_address: `0.0.0.0:${FRONTEND_METRICS_PORT}`,
  };
}

export interface AuthConfigReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly installation: InstallationView;
  readonly logger: Logger;
  /** Where the auth endpoint's config Secret lives (the release namespace). */
  readonly secret: { namespace: string; name: string };
  /** Validations shared with the Share reconciler; one of its own if absent. */
  readonly memo?: ShareMemo;
}

/** Keeps the auth-endpoint config Secret listing every OAuth share; applies only on change. */
export class AuthConfigReconciler implements Reconciler {
  readonly kind = 'AuthConfig';
  /** One key: one apply at a time. */
  readonly concurrency = 1;
  readonly watches: Watches;
  private readonly deps: AuthConfigReconcilerDeps;
  private lastApplied: string | undefined;
  private readonly memo: ShareMemo;

  constructor(deps: AuthConfigReconcilerDeps) {
    this.deps = deps;
    this.memo = deps.memo ?? new ShareMemo(deps.caches.shares);
    const only = [AUTH_CONFIG_KEY];
    this.watches = {
      keys: only,
      watches: [
        { source: deps.caches.shares, map: (change) => (involvesOAuth(change) ? only : []), delayMs: SHARE_BURST_MS },
        { source: deps.caches.frontendSecret, map: () => only },
      ],
    };
  }

  /** Forget what was applied (on gaining leadership: another replica may have written since). */
  reset(): void {
    this.lastApplied = undefined;
  }

  async reconcile(): Promise<ReconcileResult> {
    const install = this.deps.installation.current();
    if (!install?.ok) return { result: 'waiting' };
    const shares: ValidShare[] = [];
    const seen = new Set<string>();
    const ordered = this.deps.caches.shares.list().filter((s) => s.spec?.oauth && !s.metadata.deletionTimestamp);
    ordered.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''));
    for (const share of ordered) {
      const v = this.memo.validate(share, install.value);
      if (v.ok && !seen.has(v.value.token)) {
        seen.add(v.value.token);
        shares.push(v.value);
      }
    }
    const desired = authFrontendConfig(install.value, shares);
    // Compared as JSON, which is much cheaper than rendering the YAML for an unchanged config.
    const key = JSON.stringify(desired);
    if (key === this.lastApplied) return { result: 'success' };
    const config = toYaml(desired);
    const { namespace, name } = this.deps.secret;
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY, 'app.kubernetes.io/component': 'auth-frontend' },
      },
      type: 'Opaque',
      data: { [FRONTEND_CONFIG_FILE]: Buffer.from(config).toString('base64') },
    };
    await this.deps.client.apply(resourcePath(SECRETS, namespace, name), secret);
    this.lastApplied = key;
    this.deps.logger.info(
      { secretRef: `${namespace}/${name}`, oauthShares: shares.length },
      'auth endpoint config updated',
    );
    return { result: 'success' };
  }
}

/** Whether a Share change can change the auth config: the Share is (or was) an OAuth share. */
function involvesOAuth(change: Change<Share>): boolean {
  return Boolean(change.object.spec?.oauth || (change.type === 'updated' && change.old.spec?.oauth));
}
