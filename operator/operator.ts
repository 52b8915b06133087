import type { KubeConfig } from '@kubernetes/client-node';
import { startHealthServer } from '../lib/health.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import { AccessReconciler } from './access-reconciler.ts';
import { AuthConfigReconciler } from './auth-config-reconciler.ts';
import type { BackoffPolicy } from './backoff.ts';
import { allInformers, createCaches } from './caches.ts';
import { Controller, type Reconciler } from './controller.ts';
import { EnrollmentReconciler } from './enrollment-reconciler.ts';
import { EventRecorder } from './events.ts';
import { InstallationState } from './installation-state.ts';
import { LeaderElector } from './leader.ts';
import { Leadership } from './leadership.ts';
import { OperatorMetrics } from './metrics.ts';
import type { OperatorOptions } from './options.ts';
import { ShareMemo } from './share-memo.ts';
import { ShareReconciler } from './share-reconciler.ts';
import { wireWatches } from './watches.ts';

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
 * Builds and starts the operator: the informer caches, one controller per reconciler with the
 * watches it declares (operator/watches.ts), leader election, and the health/metrics listener.
 * Reconcilers run only while this replica leads (or always, without leader election) and only once
 * the caches are synced.
 */
export async function startOperator(options: StartOperatorOptions): Promise<RunningOperator> {
  const logger = options.logger ?? createLogger('svc-operator');
  const metrics = new OperatorMetrics();
  const client = await KubeClient.create(options.kubeConfig, (verb, code) =>
    metrics.apiRequests.inc({ verb, code: String(code) }),
  );
  const caches = createCaches({
    client,
    logger,
    metrics,
    namespace: options.namespace,
    frontendSecret: options.frontendSecret,
    ...(options.watchBackoff ? { watchBackoff: options.watchBackoff } : {}),
  });
  const informers = allInformers(caches);
  // Before the reconcilers' watches: a change of the Secret is parsed before anything it wakes runs.
  const installation = new InstallationState(caches.frontendSecret, options.frontendSecret, logger);
  const events = new EventRecorder(client, logger, options.identity);
  const { image } = options;
  const memo = new ShareMemo(caches.shares);
  const reconcilers: Reconciler[] = [
    new ShareReconciler({
      client,
      caches,
      installation,
      events,
      logger,
      image,
      domain: options.shareDomain,
      ingress: options.ingress,
      memo,
    }),
    new AccessReconciler({ client, caches, events, logger, image }),
    new AuthConfigReconciler({ client, caches, installation, logger, secret: options.authSecret, memo }),
    new EnrollmentReconciler({ client, caches, events, logger, image }),
  ];
  const backoff = options.reconcileBackoff ?? { baseMs: 1000, maxMs: 300_000 };
  const controllers = reconcilers.map((reconciler) => {
    const concurrency = reconciler.concurrency ?? options.concurrency;
    const controller = new Controller(reconciler, { metrics, logger, concurrency, backoff });
    wireWatches(reconciler, controller);
    return controller;
  });

  const synced = (): boolean => informers.every((i) => i.hasSynced);
  const leadership = new Leadership({ controllers, synced, beforeStart: () => installation.ensureRead(), metrics });
  for (const i of informers) i.start();
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
        onStartedLeading: () => leadership.started(),
        onStoppedLeading: () => leadership.stopped(),
      })
    : undefined;
  if (elector) elector.start();
  else leadership.started();

  const health = await startHealthServer(options.metricsListen, {
    registry: metrics.registry,
    ready: () => {
      if (!synced()) return { ok: false, detail: 'caches not synced' };
      if (!elector) return { ok: true, detail: 'ok' };
      return { ok: true, detail: elector.isLeader ? 'ok: leading' : 'ok: standing by' };
    },
  });
  logger.info(
    {
      namespace: options.namespace ?? 'all',
      identity: options.identity,
      leaderElect: options.leaderElect,
      metricsPort: health.port,
    },
    'operator started',
  );

  return {
    metrics,
    metricsPort: health.port,
    identity: options.identity,
    isLeader: () => leadership.isLeading,
    isSynced: synced,
    close: async () => {
      if (elector) await elector.stop();
      await leadership.close();
      await Promise.all(informers.map((i) => i.stop()));
      await health.close();
      client.close();
      logger.info('operator stopped');
    },
  };
}
