import { setTimeout as sleep } from 'node:timers/promises';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { backoffDelay, type BackoffPolicy } from '../../lib/backoff.ts';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import {
  FRONTEND_AUTHENTICATE_PATH,
  FRONTEND_REGISTRY_PATH,
  FRONTEND_TOKEN_HEADER,
  REGISTRY_POLL_MS,
  revisionParts,
  type RegistrySnapshot,
} from '../../lib/tunnel/frontend-api.ts';

export interface RemoteShareDirectoryOptions {
  /** The controller API's base URL (`controller.url`). */
  readonly controllerUrl: URL;
  /** The frontend credential (`controller.credential_file`), sent as `X-FRONTEND-TOKEN`. */
  readonly credential: string;
  readonly logger: Logger;
  /** Retry delays while the controller is unreachable. */
  readonly backoff?: BackoffPolicy;
}

const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };
/** A poll is given up this long after the controller should have answered it. */
const POLL_GRACE_MS = 10_000;
const AUTHENTICATE_TIMEOUT_MS = 10_000;

/**
 * The share registry as a frontend in its own process sees it (`svc public-frontend`): a view kept
 * current by long-polling `GET /api/v1/frontend/registry` on the controller, so lookups on the
 * request path stay synchronous and local. While the controller is unreachable the last view keeps
 * serving and polls retry with jittered backoff; `ready` resolves once the first snapshot arrived
 * (the frontend's `/readyz` waits for it).
 *
 * Revocations: every revoked environment the controller lists is announced once to `onRevoked`. A
 * frontend that was cut off longer than the controller keeps revocations, or whose controller
 * restarted, cannot tell what it missed; it checks again the environment tokens it accepted
 * (one `authenticate` call each) and revokes those refused.
 */
export class RemoteShareDirectory implements ShareDirectory {
  /** Resolves when the first snapshot arrived. */
  readonly ready: Promise<void>;
  private readonly options: RemoteShareDirectoryOptions;
  private shares = new Map<string, PublishedShare>();
  private revision: string | undefined;
  private seenRevocations = new Set<string>();
  /** Environment tokens accepted here, per environment, to re-check after a gap (memory only). */
  private readonly accepted = new Map<string, string>();
  /** The controller's ticket per accepted environment: proves to `/frontend/report` that its token was presented. */
  private readonly tickets = new Map<string, string>();
  private recheckPending = false;
  private readonly listeners = new Set<(envZId: string) => void>();
  private readonly stop = new AbortController();
  private markReady: () => void = () => undefined;
  private readonly loop: Promise<void>;

  constructor(options: RemoteShareDirectoryOptions) {
    this.options = options;
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    this.loop = this.run();
  }

  /** True once the first snapshot arrived. */
  get isReady(): boolean {
    return this.revision !== undefined;
  }

  lookup(token: string): PublishedShare | undefined {
    return this.shares.get(token);
  }

  async authenticate(environmentToken: string): Promise<EnvironmentIdentity | undefined> {
    const res = await fetch(new URL(FRONTEND_AUTHENTICATE_PATH, this.options.controllerUrl), {
      method: 'POST',
      headers: { [FRONTEND_TOKEN_HEADER]: this.options.credential, 'content-type': MEDIA_TYPE },
      body: JSON.stringify({ environmentToken }),
      signal: AbortSignal.any([this.stop.signal, AbortSignal.timeout(AUTHENTICATE_TIMEOUT_MS)]),
    });
    const body = (await res.json().catch(() => ({}))) as Partial<EnvironmentIdentity> & {
      code?: string;
      ticket?: string;
    };
    if (res.status === 401 && body.code === 'environment_not_found') return undefined;
    if (res.status !== 200 || typeof body.envZId !== 'string' || typeof body.accountId !== 'string') {
      throw new Error(`controller answered ${res.status} ${body.code ?? ''} to ${FRONTEND_AUTHENTICATE_PATH}`);
    }
    this.accepted.set(body.envZId, environmentToken);
    if (typeof body.ticket === 'string') this.tickets.set(body.envZId, body.ticket);
    return { envZId: body.envZId, accountId: body.accountId };
  }

  /** The controller's ticket for an environment whose token was accepted here (reporter.ts). */
  ticketOf(envZId: string): string | undefined {
    return this.tickets.get(envZId);
  }

  onRevoked(listener: (envZId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.stop.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    let failures = 0;
    while (!this.stop.signal.aborted) {
      try {
        this.apply(await this.poll());
        if (failures > 0) logger.info({ revision: this.revision }, 'registry: controller reachable again; resynced');
        failures = 0;
      } catch (err) {
        if (this.stop.signal.aborted) break;
        failures++;
        const delayMs = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, failures);
        logger.warn(
          { err: errorText(err), failures, retryInMs: delayMs, serving: this.shares.size },
          'registry: cannot reach the controller; serving the last view',
        );
        await sleep(delayMs, undefined, { signal: this.stop.signal }).catch(() => undefined);
      }
    }
  }

  private async poll(): Promise<RegistrySnapshot> {
    const url = new URL(FRONTEND_REGISTRY_PATH, this.options.controllerUrl);
    if (this.revision !== undefined) url.searchParams.set('after', this.revision);
    const res = await fetch(url, {
      headers: { [FRONTEND_TOKEN_HEADER]: this.options.credential },
      signal: AbortSignal.any([this.stop.signal, AbortSignal.timeout(REGISTRY_POLL_MS + POLL_GRACE_MS)]),
    });
    const body = (await res.json()) as Partial<RegistrySnapshot> & { code?: string };
    if (res.status !== 200) throw new Error(`controller answered ${res.status} ${body.code ?? ''}`);
    if (typeof body.revision !== 'string' || !Array.isArray(body.shares) || !Array.isArray(body.revoked)) {
      throw new Error('controller answered a registry snapshot of the wrong shape');
    }
    return body as RegistrySnapshot;
  }

  private apply(snapshot: RegistrySnapshot): void {
    const previous = this.revision;
    const first = previous === undefined;
    if (!first && this.missedRevocations(previous, snapshot)) this.recheckPending = true;
    this.shares = new Map(snapshot.shares.map((s) => [s.token, Object.freeze({ ...s })]));
    this.revision = snapshot.revision;
    const listed = new Set<string>();
    for (const r of snapshot.revoked) {
      const key = `${r.envZId}@${r.revision}`;
      listed.add(key);
      if (!first && !this.seenRevocations.has(key)) this.revoke(r.envZId);
    }
    this.seenRevocations = listed;
    if (first) {
      this.options.logger.info(
        { revision: snapshot.revision, shares: snapshot.shares.length },
        'registry: first snapshot',
      );
      this.markReady();
    }
    if (this.recheckPending) void this.recheck();
  }

  /** True when revocations between `previous` and this snapshot may be missing from its list. */
  private missedRevocations(previous: string, snapshot: RegistrySnapshot): boolean {
    const before = revisionParts(previous);
    const since = revisionParts(snapshot.revokedSince);
    const now = revisionParts(snapshot.revision);
    if (!before || !since || !now || before.run !== now.run) return true;
    return since.run === before.run && before.counter < since.counter;
  }

  /** After a gap: the environments whose accepted token the controller now refuses are revoked. */
  private async recheck(): Promise<void> {
    this.recheckPending = false;
    for (const [envZId, token] of [...this.accepted]) {
      try {
        if (!(await this.authenticate(token))) this.revoke(envZId);
      } catch {
        this.recheckPending = true;
      }
    }
    this.options.logger.info(
      { environments: this.accepted.size },
      'registry: re-checked tunnel credentials after a gap',
    );
  }

  private revoke(envZId: string): void {
    this.accepted.delete(envZId);
    this.tickets.delete(envZId);
    for (const listener of this.listeners) listener(envZId);
  }
}
