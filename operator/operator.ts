import type { KubeConfig } from '@kubernetes/client-node';
import { createLogger, type Logger } from '../lib/logger.ts';
import { AccessReconciler } from './access-reconciler.ts';
import { AUTH_CONFIG_KEY, AuthConfigReconciler } from './auth-config-reconciler.ts';
import type { BackoffPolicy } from './backoff.ts';
import { ownedBy, type Caches, type InstallationView } from './caches.ts';
import { Controller } from './controller.ts';
import { EnrollmentReconciler } from './enrollment-reconciler.ts';
import type { AgentEnrollment } from './enrollment-children.ts';
import { EventRecorder } from './events.ts';
import { startHealthServer } from './health-server.ts';
import { Informer, apiSource } from './informer.ts';
import { parseInstallation, type InstallationResult } from './installation.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { LeaderElector } from './leader.ts';
import { OperatorMetrics } from './metrics.ts';
import type { OperatorOptions } from './options.ts';
import {
  ACCESSES,
  AGENT_ENROLLMENTS,
  DEPLOYMENTS,
  INGRESSES,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SECRETS,
  SERVICES,
  SHARES,
  objectKey,
  resourcePath,
  type KubeObject,
  type Resource,
  type Share,
} from '../lib/kube/resources.ts';
import { ShareReconciler } from './share-reconciler.ts';

export interface StartOperatorOptions extends OperatorOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger?: Logger;
  /** Leader-election timings (tests shorten them); defaults 15 s / 10 s / 2 s. */
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly reconcileBackoff?: BackoffPolicy;
  readonly watchBackoff?: BackoffPolicy;
}

export interface RunningOperator {
  readonly metrics: OperatorMetrics;
  readonly metricsPort: number;
  readonly identity: string;
  isLeader(): boolean;
  isSynced(): boolean;
  close(): Promise<void>;
}

/**
 * Builds and starts the operator: informers (Shares, Accesses, the managed children, the
 * installation's frontend Secret), one controller per kind, leader election, and the
 * health/metrics listener. Reconcilers run only while this replica leads (or always, without
 * leader election) and only once the caches are synced.
 */
export async function startOperator(options: StartOperatorOptions): Promise<RunningOperator> {
  const logger = options.logger ?? createLogger('svc-operator');
  const metrics = new OperatorMetrics();
  const client = await KubeClient.create(options.kubeConfig, (verb, code) =>
    metrics.apiRequests.inc({ verb, code: String(code) }),
  );
  const ns = options.namespace;

  const informer = <T extends KubeObject>(
    resource: Resource,
    selectors: { labelSelector?: string; fieldSelector?: string } = {},
    namespace = ns,
  ): Informer<T> =>
    new Informer<T>({
      name: resource.plural,
      source: apiSource(client, resourcePath(resource, namespace)),
      logger,
      ...selectors,
      ...(options.watchBackoff ? { backoff: options.watchBackoff } : {}),
      onRestart: (reason) => metrics.watchRestarts.inc({ resource: resource.plural, reason }),
    });
  const managed = { labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` };
  const caches: Caches = {
    shares: informer<Share>(SHARES),
    accesses: informer(ACCESSES),
    deployments: informer(DEPLOYMENTS, managed),
    services: informer(SERVICES, managed),
    ingresses: informer(INGRESSES, managed),
    secrets: informer(SECRETS, managed),
  };
  const frontendSecret = informer(
    SECRETS,
    { fieldSelector: `metadata.name=${options.frontendSecret.name}` },
    options.frontendSecret.namespace,
  );
  const enrollments = informer<AgentEnrollment>(AGENT_ENROLLMENTS);
  const all: Informer[] = [...(Object.values(caches) as Informer[]), frontendSecret, enrollments];

  let installation: InstallationResult | undefined;
  const installationView: InstallationView = { current: () => installation };
  const events = new EventRecorder(client, logger, options.identity);
  const backoff = options.reconcileBackoff ?? { baseMs: 1000, maxMs: 300_000 };
  const shareController = new Controller(
    new ShareReconciler({
      client,
      caches,
      installation: installationView,
      events,
      logger,
      image: options.image,
      domain: options.shareDomain,
      ingress: options.ingress,
    }),
    { metrics, logger, concurrency: options.concurrency, backoff },
  );
  const accessController = new Controller(
    new AccessReconciler({ client, caches, events, logger, image: options.image }),
    {
      metrics,
      logger,
      concurrency: options.concurrency,
      backoff,
    },
  );
  const authReconciler = new AuthConfigReconciler({
    client,
    caches,
    installation: installationView,
    logger,
    secret: options.authSecret,
  });
  const authController = new Controller(authReconciler, { metrics, logger, concurrency: 1, backoff });
  const enrollmentController = new Controller(
    new EnrollmentReconciler({ client, enrollments, caches, events, logger, image: options.image }),
    { metrics, logger, concurrency: options.concurrency, backoff },
  );
  const controllers = [shareController, accessController, authController, enrollmentController];
  enrollments.on({
    onAdd: (e) => enrollmentController.add(objectKey(e)),
    onUpdate: (old, e) => {
      if (specChanged(old, e)) enrollmentController.add(objectKey(e));
    },
  });

  // Share changes reach the auth config at most twice a second: a burst of new OAuth shares is one apply.
  const authSoon = (): void => authController.queue.addAfter(AUTH_CONFIG_KEY, 500);
  // Wiring: every event enqueues the key of the object to converge (level-based: the event type is ignored).
  const accessesIn = (namespace: string | undefined): void => {
    for (const a of caches.accesses.list()) if (a.metadata.namespace === namespace) accessController.add(objectKey(a));
  };
  caches.shares.on({
    onAdd: (s) => {
      shareController.add(objectKey(s));
      accessesIn(s.metadata.namespace);
      if (s.spec?.oauth) authSoon();
    },
    onUpdate: (old, s) => {
      if (specChanged(old, s)) shareController.add(objectKey(s));
      if (old.status?.token !== s.status?.token || old.spec?.shareMode !== s.spec?.shareMode)
        accessesIn(s.metadata.namespace);
      if (old.spec?.oauth || s.spec?.oauth) authSoon();
    },
    onDelete: (s) => {
      accessesIn(s.metadata.namespace);
      if (s.spec?.oauth) authSoon();
      const token = s.status?.token ?? s.spec?.token;
      for (const other of caches.shares.list())
        if (token && (other.spec?.token ?? other.status?.token) === token) shareController.add(objectKey(other));
    },
  });
  caches.accesses.on({
    onAdd: (a) => accessController.add(objectKey(a)),
    onUpdate: (old, a) => {
      if (specChanged(old, a)) accessController.add(objectKey(a));
    },
  });
  const toOwner = (child: KubeObject): void => {
    const share = ownedBy(child, SHARES.kind);
    if (share) shareController.add(share);
    const access = ownedBy(child, ACCESSES.kind);
    if (access) accessController.add(access);
    const enrollment = ownedBy(child, AGENT_ENROLLMENTS.kind);
    if (enrollment) enrollmentController.add(enrollment);
  };
  for (const cache of [caches.deployments, caches.services, caches.ingresses, caches.secrets]) {
    cache.on({ onAdd: toOwner, onUpdate: (_old, child) => toOwner(child), onDelete: toOwner });
  }
  const installationChanged = (secret: KubeObject | undefined): void => {
    installation = secret
      ? parseInstallation(secret.data as Record<string, string> | undefined)
      : { ok: false, problems: ['the Secret does not exist'] };
    const where = `${options.frontendSecret.namespace}/${options.frontendSecret.name}`;
    if (installation.ok)
      logger.info(
        { secret: where, providers: installation.installation.oauth.providers.map((p) => p.name) },
        'installation frontend settings loaded',
      );
    else
      logger.error(
        { secret: where, problems: installation.problems },
        'installation frontend Secret is unusable; OAuth shares wait for it',
      );
    for (const s of caches.shares.list()) shareController.add(objectKey(s));
    authController.add(AUTH_CONFIG_KEY);
  };
  frontendSecret.on({
    onAdd: installationChanged,
    onUpdate: (_o, s) => installationChanged(s),
    onDelete: () => installationChanged(undefined),
  });

  const synced = (): boolean => all.every((i) => i.hasSynced);
  let leading = !options.leaderElect;
  let activation = 0;
  const activate = async (): Promise<void> => {
    const mine = ++activation;
    while (!synced()) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (mine !== activation) return;
    }
    if (mine !== activation || !leading) return;
    if (!installation) installationChanged(frontendSecret.list()[0]);
    authReconciler.reset();
    for (const s of caches.shares.list()) shareController.add(objectKey(s));
    for (const a of caches.accesses.list()) accessController.add(objectKey(a));
    for (const e of enrollments.list()) enrollmentController.add(objectKey(e));
    authController.add(AUTH_CONFIG_KEY);
    metrics.leader.set(1);
    for (const c of controllers) c.queue.resume();
  };
  const deactivate = async (): Promise<void> => {
    activation++;
    metrics.leader.set(0);
    for (const c of controllers) c.queue.pause();
    await Promise.all(controllers.map((c) => c.queue.idle()));
  };

  for (const i of all) i.start();
  const elector = options.leaderElect
    ? new LeaderElector({
        client,
        namespace: options.lease.namespace,
        name: options.lease.name,
        identity: options.identity,
        logger,
        ...(options.leaseDurationMs ? { leaseDurationMs: options.leaseDurationMs } : {}),
        ...(options.renewDeadlineMs ? { renewDeadlineMs: options.renewDeadlineMs } : {}),
        ...(options.retryPeriodMs ? { retryPeriodMs: options.retryPeriodMs } : {}),
        onStartedLeading: () => {
          leading = true;
          void activate();
        },
        onStoppedLeading: async () => {
          leading = false;
          await deactivate();
        },
      })
    : undefined;
  if (elector) elector.start();
  else void activate();

  const health = await startHealthServer(options.metricsListen, metrics.registry, () => {
    if (!synced()) return { ok: false, detail: 'caches not synced' };
    if (!elector) return { ok: true, detail: 'ok' };
    return { ok: true, detail: elector.isLeader ? 'ok: leading' : 'ok: standing by' };
  });
  logger.info(
    { namespace: ns ?? 'all', identity: options.identity, leaderElect: options.leaderElect, metricsPort: health.port },
    'operator started',
  );

  return {
    metrics,
    metricsPort: health.port,
    identity: options.identity,
    isLeader: () => leading,
    isSynced: synced,
    close: async () => {
      if (elector) await elector.stop();
      await deactivate();
      await Promise.all(controllers.map((c) => c.queue.close()));
      await Promise.all(all.map((i) => i.stop()));
      await health.close();
      client.close();
      logger.info('operator stopped');
    },
  };
}

/**
 * Whether an update needs a reconcile: the spec (generation), deletion or labels changed, or the
 * status no longer reflects the generation. The operator's own status writes pass this filter
 * without a reconcile, so writing status cannot loop.
 */
function specChanged(old: KubeObject, obj: KubeObject & { status?: { observedGeneration?: number } }): boolean {
  return (
    old.metadata.generation !== obj.metadata.generation ||
    old.metadata.deletionTimestamp !== obj.metadata.deletionTimestamp ||
    JSON.stringify(old.metadata.labels ?? {}) !== JSON.stringify(obj.metadata.labels ?? {}) ||
    obj.status?.observedGeneration !== obj.metadata.generation
  );
}
