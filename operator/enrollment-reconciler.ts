import type { EnrollmentFile } from '../lib/remoting/files.ts';
import { callApi } from '../lib/api-client.ts';
import { SvcError, errorText, problemText } from '../lib/errors.ts';
import type { ConditionReason } from '../lib/error-codes.ts';
import type { Logger } from '../lib/logger.ts';
import { applyChild } from './apply.ts';
import type { Caches } from './caches.ts';
import type { ReconcileResult } from './controller.ts';
import { ObjectReconciler } from './object-reconciler.ts';
import {
  UNENROLL_FINALIZER,
  controllerFailure,
  desiredEnvironmentAgent,
  enrollmentChildName,
  validateEnrollment,
  type AgentEnrollment,
  type AgentEnrollmentStatus,
  type EnrollmentState,
  type ValidEnrollment,
} from './enrollment-children.ts';
import { ControllerEnrollment } from './enrollment-controller-api.ts';
import { EnrollmentSecrets } from './enrollment-secrets.ts';
import type { EventRecorder } from './events.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import {
  AGENT_ENROLLMENTS,
  DEPLOYMENTS,
  ROLES,
  ROLE_BINDINGS,
  SERVICE_ACCOUNTS,
  objectPath,
  splitKey,
} from '../lib/kube/resources.ts';
import { deploymentAvailable } from './status.ts';
import type { Watches } from './watches.ts';
import type { PodSettings } from './pod-settings.ts';

export interface EnrollmentReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly image: string;
  /** Settings of the environment-agent pods (operator/pod-settings.ts). */
  readonly pods?: PodSettings;
  /** The controller API client (lib/api-client.ts); replaceable in tests. */
  readonly callApi?: typeof callApi;
  /** How long after deletion unenrolling is retried before the finalizer is dropped anyway; default 10 min. */
  readonly unenrollDeadlineMs?: number;
}

/** A token Secret that is missing or wrong is not watched: look again after this long. */
const RECHECK_MS = 30_000;
/** How often an enrolled environment is confirmed at the controller (it may be unenrolled there). */
const VERIFY_MS = 5 * 60_000;
const UNENROLL_DEADLINE_MS = 10 * 60_000;

/**
 * AgentEnrollment → an environment at the controller (`/environment/enable`), enrolled
 * (`/agent/enroll`), with the enrollment token, envZId and pinned controller identity kept in the
 * Secret `svc-agent-<name>-enrollment` — never in status, Events or logs — and the environment
 * agent (ServiceAccount + Role for Shares/Accesses in this namespace, RoleBinding, Deployment).
 *
 * The environment lives outside the cluster, so this is the one reconciler with a finalizer
 * (`svc.dev/unenroll`): deleting the AgentEnrollment unenrolls and disables the environment at the
 * controller before the object goes; the garbage collector removes the children.
 *
 * Enrollment is written down step by step (envZId right after enabling, the enrollment file right
 * after enrolling), and the state Secret is read from the API server, not the cache, so a retry
 * never enables a second environment. An enrollment whose token was lost (a crash between enroll
 * and the write) is replaced: unenroll, enroll again.
 */
export class EnrollmentReconciler extends ObjectReconciler<
  EnrollmentReconcilerDeps,
  AgentEnrollment,
  Pick<AgentEnrollmentStatus, 'envZId' | 'enrolled'>
> {
  readonly watches: Watches;
  private readonly secrets: EnrollmentSecrets;
  private readonly controller: ControllerEnrollment;

  constructor(deps: EnrollmentReconcilerDeps) {
    super(deps, AGENT_ENROLLMENTS, 'enrollment');
    this.secrets = new EnrollmentSecrets(deps.client);
    const { events, logger } = deps;
    this.controller = new ControllerEnrollment({ api: deps.callApi ?? callApi, secrets: this.secrets, events, logger });
    const { enrollments, deployments, secrets } = deps.caches;
    this.watches = {
      for: enrollments,
      owns: [deployments, secrets],
    };
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const e = this.deps.caches.enrollments.get(namespace, name);
    if (!e) return { result: 'success' };
    if (e.metadata.deletionTimestamp) return await this.finalize(e);

    const validation = validateEnrollment(e);
    if (!validation.ok) {
      const message = validation.problems.map(problemText).join('; ');
      return await this.notReady(e, 'InvalidSpec', message, 'invalid', undefined);
    }
    const spec = validation.value;
    const finalizers = e.metadata.finalizers ?? [];
    if (!finalizers.includes(UNENROLL_FINALIZER)) await this.setFinalizers(e, [...finalizers, UNENROLL_FINALIZER]);

    const enrolled = await this.enroll(e, spec, await this.standingState(key, e, spec));
    if ('outcome' in enrolled) return enrolled.outcome;
    const { state, enrollment } = enrolled;
    await this.applyAgent(e, enrollment);
    const ready = {
      type: 'Ready',
      status: 'True',
      reason: 'Enrolled',
      message: `enrolled with ${spec.controllerUrl} as environment ${state.envZId}; environment agent ${enrollmentChildName(name)} applied`,
    } as const;
    const deployment = this.deps.caches.deployments.get(e.metadata.namespace ?? '', enrollmentChildName(name));
    await this.report.ready(e, { envZId: state.envZId, enrolled: true }, [
      ready,
      deploymentAvailable(deployment, 'environment agent Deployment'),
    ]);
    return { result: 'success', requeueAfterMs: VERIFY_MS };
  }

  /**
   * The stored enrollment state that still stands: an enrollment the controller no longer knows is
   * dropped (the environment kept while it exists), and one at another controller than the spec's
   * is released there (best effort) and dropped.
   */
  private async standingState(
    key: string,
    e: AgentEnrollment,
    spec: ValidEnrollment,
  ): Promise<EnrollmentState | undefined> {
    let state = await this.secrets.readState(e);
    const standing =
      state?.enrollment && state.controllerUrl === spec.controllerUrl
        ? await this.controller.standing(e, spec, state)
        : 'enrolled';
    if (state && standing !== 'enrolled') {
      // Removed at the controller by another route. The AgentEnrollment states the wish to be
      // enrolled, so enroll again (in the same environment while it exists); deleting the object is
      // how a namespace is unenrolled.
      this.deps.events.record(
        e,
        'Warning',
        'EnrollmentLost',
        'the controller no longer knows this enrollment; enrolling again',
      );
      if (standing === 'not_enrolled') {
        state = { controllerUrl: state.controllerUrl, envZId: state.envZId };
        await this.secrets.writeState(e, state);
      } else {
        await this.secrets.deleteState(e);
        state = undefined;
      }
    }
    if (state && state.controllerUrl !== spec.controllerUrl) {
      // Moved to another controller: release the old environment (best effort), start afresh.
      await this.controller
        .release(e, state, spec)
        .catch((err: unknown) =>
          this.deps.logger.warn(
            { enrollment: key, err: errorText(err) },
            'could not release the environment at the previous controller',
          ),
        );
      await this.secrets.deleteState(e);
      state = undefined;
    }
    return state;
  }

  /**
   * Enables and enrolls the environment at the controller unless the state holds an enrollment
   * already; or the reconcile's outcome when that cannot be done now (a retryable controller
   * failure is thrown, for backoff).
   */
  private async enroll(
    e: AgentEnrollment,
    spec: ValidEnrollment,
    state: EnrollmentState | undefined,
  ): Promise<{ state: EnrollmentState; enrollment: EnrollmentFile } | { outcome: ReconcileResult }> {
    if (!state?.enrollment) {
      const token = await this.secrets.accountToken(e, spec);
      if (!token.ok) {
        const message = token.problems.map(problemText).join('; ');
        return { outcome: await this.notReady(e, 'AccountTokenMissing', message, 'waiting', state, RECHECK_MS) };
      }
      try {
        state = await this.controller.enroll(e, spec, token.value, state);
      } catch (err) {
        const { reason, retry } = controllerFailure(err);
        const outcome = await this.notReady(e, reason, errorText(err), 'waiting', state, retry ? undefined : 60_000);
        if (retry) throw err;
        return { outcome };
      }
    }
    const enrollment = state.enrollment;
    if (!enrollment) throw new SvcError('enrollment_incomplete', 'enrollment state has no enrollment file');
    return { state, enrollment };
  }

  /** Deletion: unenroll and disable the environment at the controller, then drop the finalizer. */
  private async finalize(e: AgentEnrollment): Promise<ReconcileResult> {
    const finalizers = e.metadata.finalizers ?? [];
    if (!finalizers.includes(UNENROLL_FINALIZER)) return { result: 'success' };
    const state = await this.secrets.readState(e);
    const validation = validateEnrollment(e);
    if (state && validation.ok) {
      const token = await this.secrets.accountToken(e, validation.value);
      if (token.ok) {
        let released = true;
        try {
          await this.controller.release(e, state, validation.value, token.value);
        } catch (err) {
          released = false;
          const { reason } = controllerFailure(err);
          if (!this.pastUnenrollDeadline(e)) {
            await this.notReady(e, reason, `cannot unenroll: ${errorText(err)}`, 'waiting', state);
            throw err;
          }
          // A finalizer that waits for a controller that never answers again would keep the
          // namespace Terminating for good: after the deadline the object goes, with a Warning.
          this.deps.events.record(
            e,
            'Warning',
            'UnenrollSkipped',
            `cannot unenroll for ${Math.round(this.unenrollDeadlineMs / 60_000)} min since deletion (${errorText(err)}): finalizer removed; environment ${state.envZId} stays at ${state.controllerUrl} (disable it with svc disable)`,
          );
        }
        if (released)
          this.deps.logger.info(
            { enrollment: `${e.metadata.namespace}/${e.metadata.name}`, envZId: state.envZId },
            'unenrolled and disabled the environment at the controller',
          );
      } else {
        this.deps.events.record(
          e,
          'Warning',
          'UnenrollSkipped',
          `${token.problems.map(problemText).join('; ')}: environment ${state.envZId} stays at ${state.controllerUrl} (disable it with svc disable)`,
        );
      }
    }
    await this.setFinalizers(
      e,
      finalizers.filter((f) => f !== UNENROLL_FINALIZER),
    );
    return { result: 'success' };
  }

  private get unenrollDeadlineMs(): number {
    return this.deps.unenrollDeadlineMs ?? UNENROLL_DEADLINE_MS;
  }

  /** Whether the object was deleted longer ago than the unenroll deadline. */
  private pastUnenrollDeadline(e: AgentEnrollment): boolean {
    const deleted = Date.parse(e.metadata.deletionTimestamp ?? '');
    return Number.isFinite(deleted) && Date.now() - deleted >= this.unenrollDeadlineMs;
  }

  private async applyAgent(e: AgentEnrollment, enrollment: EnrollmentFile): Promise<void> {
    const { client, caches, image } = this.deps;
    const children = desiredEnvironmentAgent(e, enrollment, image, this.deps.pods);
    await Promise.all([
      client.apply(objectPath(SERVICE_ACCOUNTS, children.serviceAccount), children.serviceAccount),
      client.apply(objectPath(ROLES, children.role), children.role),
    ]);
    await client.apply(objectPath(ROLE_BINDINGS, children.roleBinding), children.roleBinding);
    const live = caches.deployments.get(e.metadata.namespace ?? '', enrollmentChildName(e.metadata.name));
    await applyChild(client, DEPLOYMENTS, children.deployment, live);
  }

  /** Merge patch of the finalizer list, conditional on the resourceVersion seen (a conflict retries). */
  private async setFinalizers(e: AgentEnrollment, finalizers: string[]): Promise<void> {
    await this.deps.client.request('PATCH', objectPath(AGENT_ENROLLMENTS, e), {
      body: { metadata: { finalizers, resourceVersion: e.metadata.resourceVersion } },
      contentType: 'application/merge-patch+json',
    });
  }

  /** Ready=False, keeping what is known of the enrollment (envZId, whether an enrollment file exists). */
  private notReady(
    e: AgentEnrollment,
    reason: ConditionReason,
    message: string,
    result: 'invalid' | 'waiting',
    state: EnrollmentState | undefined,
    requeueAfterMs?: number,
  ): Promise<ReconcileResult> {
    const fields = { ...(state?.envZId ? { envZId: state.envZId } : {}), enrolled: Boolean(state?.enrollment) };
    return this.report.notReady(e, fields, reason, message, result, requeueAfterMs);
  }
}
