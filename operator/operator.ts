import type { KubeConfig } from '@kubernetes/client-node';
import { startHealthServer, type HealthServer } from '../lib/health.ts';
import { KubeClient } from '../lib/kube/client.ts';
import type { Informer } from '../lib/kube/informer.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import { AccessReconciler } from './access-reconciler.ts';
import { AuthConfigReconciler } from './auth-config-reconciler.ts';
import type { BackoffPolicy } from './backoff.ts';
import { allInformers, createCaches, type Caches } from './caches.ts';
import { Controller, type Reconciler } from './controller.ts';
import { EnrollmentReconciler } from './enrollment-reconciler.ts';
import { EventRecorder } from './events.ts';
import { InstallationState } from './frontend-secret-state.ts';
import { LeaderElector } from './leader.ts';
import { Leadership } from './leadership.ts';
import { OperatorMetrics } from './metrics.ts';
import type { OperatorOptions } from './options.ts';
import { ShareMemo } from './share-memo.ts';
import { ShareReconciler } from './share-reconciler.ts';
import { removeShareRoutes } from './share-route.ts';
import { liveness } from './liveness.ts';
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
  /** The informers' watch `timeoutSeconds` (randomised up to twice this); default 300. */
  readonly watchTimeoutSeconds?: number;
  /** A watch silent for this long is dropped and resumed; default twice its `timeoutSeconds`. */
  readonly watchIdleMs?: number;
  /** `/healthz` fails when an informer has not heard from the API server for this long; default 20 min. */
  readonly watchStallMs?: number;
  /** `/healthz` fails when a work queue has work but no reconcile finished for this long; default 5 min. */
  readonly reconcileStallMs?: number;
  /**
   * How long stepping down (the lease lost, or shutting down) waits for running reconciles; default
   * the lease duration minus the renew deadline, what is left before another replica may lead.
   */
  readonly stepDownTimeoutMs?: number;
}

export interface RunningOperator {
  readonly metrics: OperatorMetrics;
  readonly metricsPort: number;
  readonly identity: string;
  isLeader(): boolean;
  isSynced(): boolean;
  /**
   * Resolves with the exit code when the operator stopped itself: it lost the leader lease, stepped
   * down (within its deadline) and must exit, to restart as a standby. Never resolves otherwise.
   */
  readonly exited: Promise<number>;
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
  const client = await KubeClient.create(
    options.kubeConfig,
    (verb, code) => metrics.apiRequests.inc({ verb, code: String(code) }),
    options.requestTimeoutMs ? { requestTimeoutMs: options.requestTimeoutMs } : {},
  );
  const caches = createCaches({
    client,
    logger,
    metrics,
    namespace: options.namespace,
    frontendSecret: options.frontendSecret,
    authNamespace: options.authSecret.namespace,
    httpRoutes: options.ingress.route !== undefined,
    ...(options.watchBackoff ? { watchBackoff: options.watchBackoff } : {}),
    ...(options.watchTimeoutSeconds ? { watchTimeoutSeconds: options.watchTimeoutSeconds } : {}),
    ...(options.watchIdleMs ? { watchIdleMs: options.watchIdleMs } : {}),
  });
  const informers = allInformers(caches);
  // Before the reconcilers' watches: a change of the Secret is parsed before anything it wakes runs.
  const installation = new InstallationState(caches.frontendSecret, options.frontendSecret, logger);
  const parts: Parts = { options, logger, metrics, client, caches, informers };
  const controllers = startControllers(parts, createReconcilers(parts, installation));
  const synced = (): boolean => informers.every((i) => i.hasSynced);
  const beforeStart = (): void => {
    installation.ensureRead();
    if (!options.ingress.route) void removeShareRoutes(client, logger, options.namespace);
  };
  const leadership = new Leadership({ controllers, synced, beforeStart, metrics });
  for (const i of informers) i.start();
  caches.httpRoutes?.start();
  const election = electLeader(parts, leadership);
  const health = await serveHealth(parts, controllers, election.elector);
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
    exited: election.exited,
    close: async () => {
      if (election.elector) await election.elector.stop();
      if (!(await leadership.close(election.stepDownTimeoutMs)))
        logger.warn(
          { inFlight: leadership.inFlight },
          `reconciles still running after ${election.stepDownTimeoutMs} ms; stopping`,
        );
      await Promise.all([...informers, ...(caches.httpRoutes ? [caches.httpRoutes] : [])].map((i) => i.stop()));
      await health.close();
      client.close();
      logger.info('operator stopped');
    },
  };
}

/** What the operator's parts are built from. */
interface Parts {
  readonly options: StartOperatorOptions;
  readonly logger: Logger;
  readonly metrics: OperatorMetrics;
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly informers: readonly Informer[];
}

/** One reconciler per kind the operator owns: Share, Access, the auth endpoint's config, AgentEnrollment. */
function createReconcilers({ options, client, caches, logger }: Parts, installation: InstallationState): Reconciler[] {
  const events = new EventRecorder(client, logger, options.identity);
  const { image } = options;
  const pods = options.podSettings;
  const memo = new ShareMemo(caches.shares, { domain: options.shareDomain, hosts: options.reservedHosts ?? [] });
  const quotaBytes = options.authShareQuotaBytes;
  return [
    new ShareReconciler({
      client,
      caches,
      installation,
      events,
      logger,
      image,
      domain: options.shareDomain,
      ingress: options.ingress,
      pods,
      memo,
      quotaBytes,
    }),
    new AccessReconciler({ client, caches, events, logger, image, pods }),
    new AuthConfigReconciler({
      client,
      caches,
      installation,
      events,
      logger,
      secret: options.authSecret,
      memo,
      quotaBytes,
    }),
    new EnrollmentReconciler({
      client,
      caches,
      events,
      logger,
      image,
      pods,
      unenrollDeadlineMs: options.unenrollDeadlineMs,
    }),
  ];
}

/** A controller (work queue, backoff, bounded concurrency) per reconciler, woken by the watches it declares. */
function startControllers({ options, metrics, logger }: Parts, reconcilers: readonly Reconciler[]): Controller[] {
  const backoff = options.reconcileBackoff ?? { baseMs: 1000, maxMs: 300_000 };
  return reconcilers.map((reconciler) => {
    const concurrency = reconciler.concurrency ?? options.concurrency;
    const controller = new Controller(reconciler, { metrics, logger, concurrency, backoff });
    wireWatches(reconciler, controller);
    return controller;
  });
}

interface Election {
  /** Undefined without `--leader-elect`: this replica leads from the start. */
  readonly elector: LeaderElector | undefined;
  /** Resolves with the exit code once the lease was lost and the reconciles stepped down. */
  readonly exited: Promise<number>;
  readonly stepDownTimeoutMs: number;
}

/**
 * Leads at once without leader election; otherwise runs the controllers while this replica holds
 * the Lease, and on losing it steps down (bounded by what is left of the lease) and asks to exit.
 */
function electLeader({ options, client, logger }: Parts, leadership: Leadership): Election {
  const leaseDurationMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
  const stepDownTimeoutMs = options.stepDownTimeoutMs ?? Math.max(1000, leaseDurationMs - renewDeadlineMs);
  let exit: (code: number) => void = () => {};
  const exited = new Promise<number>((resolve) => (exit = resolve));
  const stepDown = async (lost: boolean): Promise<void> => {
    const started = Date.now();
    const drained = await leadership.stopped(stepDownTimeoutMs);
    if (!lost) return;
    const waitedMs = Date.now() - started;
    if (drained)
      logger.error({ waitedMs }, 'lost the leader lease: reconciles stopped; exiting to restart as a standby');
    else
      logger.error(
        { inFlight: leadership.inFlight, waitedMs },
        `lost the leader lease: ${leadership.inFlight} reconciles still running after ${stepDownTimeoutMs} ms; exiting`,
      );
    exit(1);
  };
  const elector = options.leaderElect
    ? new LeaderElector({
        client,
        namespace: options.lease.namespace,
        name: options.lease.name,
        identity: options.identity,
        logger,
        leaseDurationMs,
        renewDeadlineMs,
        ...(options.retryPeriodMs ? { retryPeriodMs: options.retryPeriodMs } : {}),
        onStartedLeading: () => leadership.started(),
        onStoppedLeading: stepDown,
      })
    : undefined;
  if (elector) elector.start();
  else leadership.started();
  return { elector, exited, stepDownTimeoutMs };
}

/** `/healthz` (informers and queues not stalled), `/readyz` (caches synced; leading or standing by), `/metrics`. */
async function serveHealth(
  { options, metrics, informers }: Parts,
  controllers: readonly Controller[],
  elector: LeaderElector | undefined,
): Promise<HealthServer> {
  const live = liveness({
    controllers,
    informers,
    watchStallMs: options.watchStallMs ?? 20 * 60_000,
    reconcileStallMs: options.reconcileStallMs ?? 5 * 60_000,
  });
  return startHealthServer(options.metricsListen, {
    registry: metrics.registry,
    live,
    ready: () => {
      if (!informers.every((i) => i.hasSynced)) return { ok: false, detail: 'caches not synced' };
      if (!elector) return { ok: true, detail: 'ok' };
      return { ok: true, detail: elector.isLeader ? 'ok: leading' : 'ok: standing by' };
    },
  });
}
