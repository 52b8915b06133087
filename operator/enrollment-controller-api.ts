import { hostname } from 'node:os';
import type { callApi } from '../lib/api-client.ts';
import { SvcError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import type { EnrollmentFile } from '../lib/remoting/files.ts';
import type { AgentEnrollment, EnrollmentState, ValidEnrollment } from './enrollment-children.ts';
import type { EnrollmentSecrets } from './enrollment-secrets.ts';
import type { EventRecorder } from './events.ts';

type Enrolled = { token: string; enrollmentId: string; controller: { zId: string; publicKey: string } };

/**
 * What the enrollment reconciler asks the controller (`/environment/*`, `/agent/*` with the
 * account token), each step written down in the state Secret before the next, so a crash between
 * two calls is picked up where it stopped.
 */
export class ControllerEnrollment {
  private readonly deps: {
    readonly api: typeof callApi;
    readonly secrets: EnrollmentSecrets;
    readonly events: EventRecorder;
    readonly logger: Logger;
  };

  constructor(deps: ControllerEnrollment['deps']) {
    this.deps = deps;
  }

  /**
   * Whether the controller still holds this enrollment. Only a definite "not enrolled" or "no such
   * environment" counts as gone; an unreachable controller or a disconnected agent does not.
   */
  async standing(
    e: AgentEnrollment,
    spec: ValidEnrollment,
    state: EnrollmentState,
  ): Promise<'enrolled' | 'not_enrolled' | 'environment_gone'> {
    const token = await this.deps.secrets.accountToken(e, spec);
    if (!token.ok) return 'enrolled';
    try {
      await this.deps.api(spec.controllerUrl, '/agent/ping', token.value, { envZId: state.envZId });
      return 'enrolled';
    } catch (err) {
      if (err instanceof SvcError && err.code === 'not_enrolled') return 'not_enrolled';
      if (err instanceof SvcError && err.code === 'environment_not_found') return 'environment_gone';
      return 'enrolled';
    }
  }

  /** enable (unless an envZId was recorded) → record it → enroll → record the enrollment file. */
  async enroll(
    e: AgentEnrollment,
    spec: ValidEnrollment,
    token: string,
    previous: EnrollmentState | undefined,
  ): Promise<EnrollmentState & { enrollment: EnrollmentFile }> {
    const { api, secrets, logger } = this.deps;
    const url = spec.controllerUrl;
    const where = `${e.metadata.namespace}/${e.metadata.name}`;
    let envZId = previous?.envZId;
    if (!envZId) {
      const enabled = await api<{ envZId: string }>(url, '/environment/enable', token, {
        description: (spec.description || `Kubernetes namespace ${e.metadata.namespace ?? ''}`).slice(0, 256),
        host: `kubernetes:${e.metadata.namespace ?? ''}@${hostname()}`.slice(0, 256),
      });
      envZId = enabled.envZId;
      await secrets.writeState(e, { controllerUrl: url, envZId });
      logger.info({ enrollment: where, envZId }, 'environment enabled at the controller');
    }
    let enrolled: Enrolled;
    try {
      enrolled = await api<Enrolled>(url, '/agent/enroll', token, { envZId });
    } catch (err) {
      if (err instanceof SvcError && err.code === 'already_enrolled') {
        // Enrolled earlier but its token was never recorded: replace that enrollment.
        await api(url, '/agent/unenroll', token, { envZId });
        enrolled = await api<Enrolled>(url, '/agent/enroll', token, { envZId });
      } else if (err instanceof SvcError && err.code === 'environment_not_found') {
        // The environment was removed at the controller: forget it, enable a new one on retry.
        await secrets.deleteState(e);
        throw err;
      } else throw err;
    }
    const enrollment: EnrollmentFile = {
      version: 1,
      apiEndpoint: url,
      envZId,
      enrollmentId: enrolled.enrollmentId,
      token: enrolled.token,
      controller: { zId: enrolled.controller.zId, publicKey: enrolled.controller.publicKey },
      enrolledAt: new Date().toISOString(),
    };
    const state = { controllerUrl: url, envZId, enrollment };
    await secrets.writeState(e, state);
    logger.info(
      { enrollment: where, envZId, enrollmentId: enrolled.enrollmentId, controller: enrolled.controller.zId },
      'enrolled with the controller',
    );
    this.deps.events.record(e, 'Normal', 'Enrolled', `enrolled with ${url} as environment ${envZId}`);
    return state;
  }

  /** Unenrolls (when enrolled) and disables the environment; "already gone" answers count as done. */
  async release(e: AgentEnrollment, state: EnrollmentState, spec: ValidEnrollment, knownToken?: string): Promise<void> {
    const found =
      knownToken === undefined ? await this.deps.secrets.accountToken(e, spec) : { ok: true, value: knownToken };
    if (!found.ok) return;
    const token = found.value;
    const gone = (err: unknown): boolean =>
      err instanceof SvcError && ['not_enrolled', 'environment_not_found', 'unauthorized'].includes(err.code);
    const call = async (path: string): Promise<void> => {
      try {
        await this.deps.api(state.controllerUrl, path, token, { envZId: state.envZId });
      } catch (err) {
        if (!gone(err)) throw err;
      }
    };
    if (state.enrollment) await call('/agent/unenroll');
    await call('/environment/disable');
  }
}
