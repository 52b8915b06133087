/**
 * The auth-config reconciler on a real API server with its Shares handed to it as its informer
 * would: a list that announces changes to the handlers registered on it. Creating thousands of
 * Share objects and their children would take the tests minutes and say nothing more about the
 * auth endpoint's share list.
 */
import { randomUUID } from 'node:crypto';
import { stringify as toYaml } from 'yaml';
import type { InformerHandlers } from '../../lib/kube/informer.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import type { KubeObject, Share } from '../../lib/kube/resources.ts';
import type { Logger } from '../../lib/logger.ts';
import { AuthConfigReconciler, type AuthConfigReconcilerDeps } from '../../operator/auth-config-reconciler.ts';
import type { Caches } from '../../operator/caches.ts';
import { EventRecorder } from '../../operator/events.ts';
import { parseInstallation } from '../../operator/frontend-secret.ts';
import type { WatchSource } from '../../operator/watches.ts';
import { AUTH_SECRET } from './auth-config-files.ts';
import { RELEASE_NS, oauthSection } from './operator-fixture.ts';

/** A watch source over a list the test changes; `update` announces a change as an informer does. */
export class Listed<T extends KubeObject> implements WatchSource<T> {
  items: T[] = [];
  private readonly handlers: InformerHandlers<T>[] = [];
  on(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }
  list(): T[] {
    return this.items;
  }
  /** Replaces `old` with `next` and tells the handlers. */
  update(old: T, next: T): void {
    this.items = this.items.map((item) => (item === old ? next : item));
    for (const h of this.handlers) h.onUpdate?.(old, next);
  }
}

/** 64 email patterns of 300 characters: about 20 KB an entry, near the most the CRD allows. */
export const BIG_PATTERNS = Array.from(
  { length: 64 },
  (_, i) => `*${String(i).padStart(2, '0')}${'x'.repeat(280)}@example.com`,
);

/** An OAuth Share created `created` seconds after 2026-01-01, token `<namespace>-<name>`. */
export function oauthShare(namespace: string, name: string, created: number, patterns: string[] = []): Share {
  return {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'Share',
    metadata: {
      name,
      namespace,
      uid: randomUUID(),
      generation: 1,
      creationTimestamp: new Date(Date.UTC(2026, 0, 1) + created * 1000).toISOString(),
    },
    spec: {
      backendMode: 'proxy',
      target: `http://${name}.${namespace}.svc:8080`,
      token: `${namespace}-${name}`,
      oauth: { provider: 'dev', emailAddressPatterns: patterns, checkInterval: '30m' },
    },
  };
}

/**
 * The reconciler over `shares` (the test's installation settings); change them through `listed`.
 * Its writes are not spread out in time unless `extra.writeBytesPerSecond` says so.
 */
export function authReconcilerFor(
  client: KubeClient,
  logger: Logger,
  shares: Share[],
  extra: Partial<AuthConfigReconcilerDeps> = {},
): { reconciler: AuthConfigReconciler; listed: Listed<Share> } {
  const installation = parseInstallation({
    'oauth.yaml': Buffer.from(toYaml({ oauth: oauthSection() })).toString('base64'),
  });
  const listed = new Listed<Share>();
  listed.items = shares;
  const caches = {
    shares: listed,
    frontendSecret: new Listed(),
    secrets: new Listed(),
    authSecrets: new Listed(),
  } as unknown as Caches;
  const reconciler = new AuthConfigReconciler({
    client,
    caches,
    installation: { current: () => installation },
    logger,
    events: new EventRecorder(client, logger, 'test'),
    secret: { namespace: RELEASE_NS, name: AUTH_SECRET },
    writeBytesPerSecond: Number.POSITIVE_INFINITY,
    ...extra,
  });
  return { reconciler, listed };
}
