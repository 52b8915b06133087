import { stringify as toYaml } from 'yaml';
import type { Logger } from '../lib/logger.ts';
import type { Caches } from './caches.ts';
import type { ReconcileResult, Reconciler } from './controller.ts';
import { AUTH_INTERNAL_PORT, type Installation } from './frontend-secret.ts';
import type { InstallationView } from './frontend-secret-state.ts';
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
import {
  AUTH_SHARE_DIRECTORY,
  MAX_SECRET_BYTES,
  SHARD_KEY,
  renderShards,
  shardKey,
  shardSecretName,
  type Shard,
} from './auth-shards.ts';
import { DEFAULT_AUTH_SHARE_QUOTA_BYTES, applyQuota, olderFirst } from './auth-quota.ts';
import type { EventRecorder } from './events.ts';
import type { ValidShare } from './share-children.ts';
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
 * The auth config's Secrets are written at most this many bytes a second on average: after a
 * write of B bytes the next waits B / rate, and the changes meanwhile become one write. Edits to
 * shares spread over every shard would otherwise rewrite up to 16 MiB a second, and each write is
 * read again by every auth endpoint replica. A full 1 MiB shard waits 2 s; all 16, 32 s.
 */
export const AUTH_WRITE_BYTES_PER_SECOND = 512 * 1024;

/**
 * The config of the installation's auth endpoint (`<release>-auth` Deployment running `svc
 * frontend`, serving `endpoint_url`'s host: OAuth callbacks and logout): the installation's
 * `oauth:` section, its shares in the shard files of `share_directory` (operator/auth-shards.ts).
 */
function authFrontendConfig(installation: Installation): Record<string, unknown> {
  // The listeners are the pod's, whatever an existing Secret says (as for the per-share sidecars):
  // the public one, and the internal one share pods ask (its own ClusterIP Service, no Ingress).
  return {
    oauth: {
      ...installation.section,
      bind_address: `0.0.0.0:${FRONTEND_PORT}`,
      internal_address: `0.0.0.0:${AUTH_INTERNAL_PORT}`,
    },
    shares: [],
    share_directory: AUTH_SHARE_DIRECTORY,
    metrics_address: `0.0.0.0:${FRONTEND_METRICS_PORT}`,
  };
}

export interface AuthConfigReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly installation: InstallationView;
  readonly logger: Logger;
  /** Warning Events on Shares left out of a full shard; none recorded if absent. */
  readonly events?: EventRecorder;
  /** Where the auth endpoint's config Secret lives (the release namespace); its shards beside it. */
  readonly secret: { namespace: string; name: string };
  /** Validations shared with the Share reconciler; one of its own if absent. */
  readonly memo?: ShareMemo;
  /** Bytes of the share list one namespace's OAuth shares may take (operator/auth-quota.ts). */
  readonly quotaBytes?: number;
  /** {@link AUTH_WRITE_BYTES_PER_SECOND} unless set. */
  readonly writeBytesPerSecond?: number;
}

/**
 * Keeps the auth-endpoint config Secret (the `oauth:` section) and its {@link AUTH_SHARDS} shard
 * Secrets listing every OAuth share; applies only the Secrets whose content changed.
 */
export class AuthConfigReconciler implements Reconciler {
  readonly kind = 'AuthConfig';
  /** One key: one apply at a time. */
  readonly concurrency = 1;
  readonly watches: Watches;
  private readonly deps: AuthConfigReconcilerDeps;
  /** Secret name → the content last applied. */
  private readonly applied = new Map<string, string>();
  /** Shares (namespace/name) left out of a full shard, announced once each. */
  private dropped = new Set<string>();
  private readonly memo: ShareMemo;
  /** No write before this time (ms since the epoch): the write rate's bound. */
  private quietUntil = 0;

  constructor(deps: AuthConfigReconcilerDeps) {
    this.deps = deps;
    this.memo = deps.memo ?? new ShareMemo(deps.caches.shares);
    const only = [AUTH_CONFIG_KEY];
    this.watches = {
      keys: only,
      watches: [
        { source: deps.caches.shares, map: (change) => (involvesOAuth(change) ? only : []), delayMs: SHARE_BURST_MS },
        { source: deps.caches.frontendSecret, map: () => only },
        { source: deps.caches.authSecrets, map: (change) => (this.forgetDeleted(change) ? only : []) },
      ],
    };
  }

  /** Forget what was applied (on gaining leadership: another replica may have written since). */
  reset(): void {
    this.applied.clear();
    this.dropped = new Set();
    this.quietUntil = 0;
  }

  async reconcile(): Promise<ReconcileResult> {
    const install = this.deps.installation.current();
    if (!install?.ok) return { result: 'waiting' };
    const wait = this.quietUntil - Date.now();
    if (wait > 0) return { result: 'success', requeueAfterMs: wait };
    const { shares, objects } = this.oauthShares(install.value);
    const shards = renderShards(shares, shardKey(install.value.oauth.signingKey));
    const { namespace, name } = this.deps.secret;
    // Shards first: a config naming the directory never points at shares not yet written.
    const written = await Promise.all(
      shards.map((shard, i) => this.applySecret(shardSecretName(name, i), SHARD_KEY, shard.text, 'auth-shares')),
    );
    const config = authFrontendConfig(install.value);
    written.push(await this.applySecret(name, FRONTEND_CONFIG_FILE, toYaml(config), 'auth-frontend'));
    const bytes = written.reduce((a, b) => a + b, 0);
    this.quietUntil = Date.now() + (bytes * 1000) / (this.deps.writeBytesPerSecond ?? AUTH_WRITE_BYTES_PER_SECOND);
    this.reportDropped(shards, objects);
    const routed = shards.reduce((n, s) => n + s.count, 0);
    this.deps.logger.debug({ secretRef: `${namespace}/${name}`, oauthShares: routed }, 'auth endpoint config in sync');
    return { result: 'success' };
  }

  /**
   * The valid OAuth shares within their namespace's quota (the Share reconciler reports those
   * over it), oldest first, one per token (the oldest holds it), and their objects.
   */
  private oauthShares(installation: Installation): { shares: ValidShare[]; objects: Map<string, Share> } {
    const valid: ValidShare[] = [];
    const objects = new Map<string, Share>();
    const ordered = this.deps.caches.shares.list().filter((s) => s.spec?.oauth && !s.metadata.deletionTimestamp);
    ordered.sort(olderFirst);
    for (const share of ordered) {
      const v = this.memo.validate(share, installation);
      if (!v.ok) continue;
      valid.push(v.value);
      objects.set(`${v.value.namespace}/${v.value.name}`, share);
    }
    const seen = new Set<string>();
    const shares = applyQuota(valid, this.deps.quotaBytes ?? DEFAULT_AUTH_SHARE_QUOTA_BYTES).admitted.filter((s) => {
      if (seen.has(s.token)) return false;
      seen.add(s.token);
      return true;
    });
    return { shares, objects };
  }

  /**
   * Applies one Opaque Secret of the release namespace with one key, unless it holds that already;
   * returns the bytes written (0 when it held them).
   */
  private async applySecret(name: string, key: string, text: string, component: string): Promise<number> {
    if (this.applied.get(name) === text) return 0;
    const { namespace } = this.deps.secret;
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY, 'app.kubernetes.io/component': component },
      },
      type: 'Opaque',
      data: { [key]: Buffer.from(text).toString('base64') },
    };
    await this.deps.client.apply(resourcePath(SECRETS, namespace, name), secret);
    this.applied.set(name, text);
    this.deps.logger.info({ secretRef: `${namespace}/${name}` }, 'auth endpoint config updated');
    return Buffer.byteLength(text);
  }

  /**
   * A full shard is an error in the log on every run and a Warning Event on each Share left out,
   * once: the Share itself serves, but no login to it can complete at the auth endpoint. The
   * shares left out are those of the namespaces using the most of the share list (auth-shards.ts).
   */
  private reportDropped(shards: readonly Shard[], objects: ReadonlyMap<string, Share>): void {
    const now = new Set<string>();
    shards.forEach((shard, i) => {
      if (shard.dropped.length === 0) return;
      const secretRef = `${this.deps.secret.namespace}/${shardSecretName(this.deps.secret.name, i)}`;
      const keys = shard.dropped.map((s) => `${s.namespace}/${s.name}`);
      this.deps.logger.error(
        { secretRef, routed: shard.count, left_out: keys.length, shares: keys.slice(0, 20) },
        `auth endpoint shard full: its Secret would pass ${MAX_SECRET_BYTES} bytes; the newest OAuth shares of the namespaces using the most get no login route`,
      );
      for (const key of keys) {
        now.add(key);
        const share = objects.get(key);
        if (this.dropped.has(key) || !share) continue;
        this.deps.events?.record(
          share,
          'Warning',
          'AuthShardFull',
          `the auth endpoint's share list ${secretRef} is full (${MAX_SECRET_BYTES} bytes) and namespace ${share.metadata.namespace ?? ''} is among those using the most of the list: logins to this share cannot complete until OAuth shares of this namespace are deleted or their email patterns shortened`,
        );
      }
    });
    this.dropped = now;
  }

  /** A deleted Secret of ours is written again: forget what was applied to it. */
  private forgetDeleted(change: Change): boolean {
    const { namespace, name } = change.object.metadata;
    if (change.type !== 'deleted' || namespace !== this.deps.secret.namespace || !this.applied.has(name)) return false;
    this.applied.delete(name);
    return true;
  }
}

/** Whether a Share change can change the auth config: the Share is (or was) an OAuth share. */
function involvesOAuth(change: Change<Share>): boolean {
  return Boolean(change.object.spec?.oauth || (change.type === 'updated' && change.old.spec?.oauth));
}
