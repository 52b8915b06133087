import { randomBytes } from 'node:crypto';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { TrafficTally } from '../../lib/share/traffic-tally.ts';
import {
  FRONTEND_REPORT_PATH,
  FRONTEND_TOKEN_HEADER,
  MAX_REPORT_ENVIRONMENTS,
  MAX_REPORT_TRAFFIC,
  REPORT_INTERVAL_MS,
  type ReplicaReport,
  type ReportedEnvironment,
  type ReportedTraffic,
} from '../../lib/tunnel/frontend-api.ts';
import type { EnvironmentPresence } from '../../lib/tunnel/presence.ts';

export interface ReplicaReporterOptions {
  readonly controllerUrl: URL;
  readonly credential: string;
  /** This replica's name in the controller's admin view: the pod name, else `host:port`. */
  readonly replica: string;
  readonly presence: EnvironmentPresence;
  readonly tally: TrafficTally;
  /** The controller's ticket for an environment whose token it accepted (RemoteShareDirectory). */
  readonly ticketOf: (envZId: string) => string | undefined;
  readonly logger: Logger;
  readonly intervalMs?: number;
}

const REPORT_TIMEOUT_MS = 10_000;

/**
 * Reports this replica's tunnels and traffic to the controller every REPORT_INTERVAL_MS
 * (`POST /api/v1/frontend/report`, docs/controller.md "The console"). The traffic taken from the
 * tally goes out in a batch numbered `seq`; until the controller acknowledges it, every report
 * resends that batch unchanged (with the presence of the moment), so a lost answer neither drops
 * nor doubles counts. Refusals are logged once per kind and retried; nothing is dropped.
 */
export class ReplicaReporter {
  private readonly options: ReplicaReporterOptions;
  private readonly run = randomBytes(8).toString('hex');
  private seq = 0;
  private batch: ReportedTraffic[] | undefined;
  private readonly timer: NodeJS.Timeout;
  private sending: Promise<void> = Promise.resolve();
  private lastProblem = '';

  constructor(options: ReplicaReporterOptions) {
    this.options = options;
    this.timer = setInterval(() => void this.tick(), options.intervalMs ?? REPORT_INTERVAL_MS);
    this.timer.unref();
  }

  /** Sends one report now (after the one in flight), resolving when it was answered or failed. */
  tick(leaving = false): Promise<void> {
    this.sending = this.sending.then(() => this.send(leaving));
    return this.sending;
  }

  /** Stops reporting and tells the controller this replica is leaving (best effort). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.tick(true);
  }

  private report(leaving: boolean): ReplicaReport {
    this.batch ??= this.options.tally.take(MAX_REPORT_TRAFFIC);
    const environments: ReportedEnvironment[] = [];
    for (const held of this.options.presence.held()) {
      const ticket = this.options.ticketOf(held.envZId);
      if (ticket) environments.push({ ...held, tunnels: Math.min(held.tunnels, 1000), ticket });
      if (environments.length >= MAX_REPORT_ENVIRONMENTS) break;
    }
    return {
      replica: this.options.replica,
      run: this.run,
      seq: this.seq,
      environments: leaving ? [] : environments,
      traffic: this.batch,
      ...(leaving ? { leaving } : {}),
    };
  }

  private async send(leaving: boolean): Promise<void> {
    const { controllerUrl, credential, logger } = this.options;
    try {
      const res = await fetch(new URL(FRONTEND_REPORT_PATH, controllerUrl), {
        method: 'POST',
        headers: { [FRONTEND_TOKEN_HEADER]: credential, 'content-type': MEDIA_TYPE },
        body: JSON.stringify(this.report(leaving)),
        signal: AbortSignal.timeout(REPORT_TIMEOUT_MS),
      });
      const body = (await res.json().catch(() => ({}))) as { code?: string; message?: string };
      if (res.status !== 200)
        throw new Error(`controller answered ${res.status} ${body.code ?? ''}: ${body.message ?? ''}`);
      this.batch = undefined;
      this.seq++;
      if (this.lastProblem) logger.info('report: the controller takes reports again');
      this.lastProblem = '';
    } catch (err) {
      const problem = errorText(err);
      if (problem !== this.lastProblem) logger.warn({ err: problem }, 'report: not delivered; retrying with the next');
      this.lastProblem = problem;
    }
  }
}
