import type { ConditionReason } from '../lib/error-codes.ts';
import type { Logger } from '../lib/logger.ts';
import { writeStatus } from './apply.ts';
import { findCondition, statusWith, type ConditionInput } from './conditions.ts';
import type { ReconcileResult } from './controller.ts';
import type { EventRecorder } from './events.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import {
  NOT_SERVING_REASONS,
  objectKey,
  type Condition,
  type KubeObject,
  type Resource,
} from '../lib/kube/resources.ts';
import { recheckAfterMs, type NotServing } from './readiness.ts';

export interface StatusReporterDeps {
  readonly client: KubeClient;
  readonly events: EventRecorder;
  readonly logger: Logger;
}

export type WithStatus = KubeObject & { status?: { conditions?: Condition[] } };

/**
 * Writes one kind's status the same way for every reconciler: `Ready` plus the kind's own fields,
 * with observedGeneration, only when it changed (operator/apply.ts). A Ready=False is announced
 * (Warning Event, log line) only when its reason or message changes, so a reconcile that keeps
 * failing the same way does not flood `kubectl describe`.
 */
export class StatusReporter<T extends WithStatus, F extends object> {
  private readonly deps: StatusReporterDeps & {
    readonly resource: Resource;
    /** The log field and word for the kind: `share`, `access`, `enrollment`. */
    readonly noun: string;
  };

  constructor(deps: StatusReporterDeps, resource: Resource, noun: string) {
    this.deps = { client: deps.client, events: deps.events, logger: deps.logger, resource, noun };
  }

  /** Ready=False with `reason`; the result and any requeue go back to the controller. */
  async notReady(
    obj: T,
    fields: F,
    reason: ConditionReason,
    message: string,
    result: 'invalid' | 'waiting',
    requeueAfterMs?: number,
  ): Promise<ReconcileResult> {
    const previous = findCondition(obj.status?.conditions, 'Ready');
    await this.write(obj, fields, [{ type: 'Ready', status: 'False', reason, message }]);
    if (previous?.reason !== reason || previous.message !== message || previous.status !== 'False') {
      this.deps.events.record(obj, 'Warning', reason, message);
      const { noun } = this.deps;
      this.deps.logger.info({ [noun]: objectKey(obj), reason }, `${noun} not ready`);
    }
    return { result, ...(requeueAfterMs !== undefined ? { requeueAfterMs } : {}) };
  }

  /** Writes the given conditions (Ready first); returns whether Ready was True before, to announce only the transition. */
  async ready(obj: T, fields: F, conditions: readonly ConditionInput[]): Promise<{ wasReady: boolean }> {
    const wasReady = findCondition(obj.status?.conditions, 'Ready')?.status === 'True';
    await this.write(obj, fields, conditions);
    return { wasReady };
  }

  /**
   * Ready from whether the applied children serve (`notServing` undefined: they do), plus `extra`
   * conditions. A pod problem (an image that cannot be pulled, a crash loop) is announced as a
   * Warning when its reason changes; while the children do not serve, the object is looked at
   * again later (pods are not watched: see `recheckAfterMs`). `becameReady` is the transition to
   * Ready=True, for the caller's Normal Event.
   */
  async serving(
    obj: T,
    fields: F,
    notServing: NotServing | undefined,
    readyMessage: string,
    extra: readonly ConditionInput[] = [],
  ): Promise<{ outcome: ReconcileResult; becameReady: boolean }> {
    const previous = findCondition(obj.status?.conditions, 'Ready');
    const ready: ConditionInput = notServing
      ? { type: 'Ready', status: 'False', reason: notServing.reason, message: notServing.message }
      : { type: 'Ready', status: 'True', reason: 'Available', message: readyMessage };
    await this.write(obj, fields, [ready, ...extra]);
    if (!notServing) return { outcome: { result: 'success' }, becameReady: previous?.status !== 'True' };
    if (notServing.problem && (previous?.reason !== notServing.reason || previous.status !== 'False')) {
      this.deps.events.record(obj, 'Warning', notServing.reason, notServing.message);
      const { noun } = this.deps;
      this.deps.logger.info({ [noun]: objectKey(obj), reason: notServing.reason }, `${noun} not serving`);
    }
    const waitingSince =
      previous?.status === 'False' && NOT_SERVING_REASONS.has(previous.reason)
        ? previous.lastTransitionTime
        : undefined;
    return { outcome: { result: 'waiting', requeueAfterMs: recheckAfterMs(waitingSince) }, becameReady: false };
  }

  private async write(obj: T, fields: F, conditions: readonly ConditionInput[]): Promise<void> {
    await writeStatus(this.deps.client, this.deps.resource, obj, obj.status, statusWith(obj, fields, conditions));
  }
}

/** `Available` mirrors a Deployment's own condition (Unknown until its controller reports). */
export function deploymentAvailable(deployment: KubeObject | undefined, what: string): ConditionInput {
  const conditions = (deployment as { status?: { conditions?: Condition[] } } | undefined)?.status?.conditions;
  const c = findCondition(conditions, 'Available');
  if (!c)
    return {
      type: 'Available',
      status: 'Unknown',
      reason: 'Pending',
      message: `the ${what} has not reported availability yet`,
    };
  return { type: 'Available', status: c.status, reason: c.reason || 'Deployment', message: c.message || '' };
}

/** `; created Deployment x, Service x` for an Event message, or nothing when nothing was created. */
export function createdSuffix(created: readonly string[]): string {
  return created.length ? `; created ${created.join(', ')}` : '';
}
