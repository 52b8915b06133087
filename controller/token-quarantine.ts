import { systemClock, type Clock } from '../lib/clock.ts';
import { formatDuration } from '../lib/duration.ts';
import { SvcError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import type { RegistrationStore, TokenReservation } from './registration-store.ts';

/**
 * How long a freed share token stays reserved to the account that freed it. It must be longer than
 * the frontends' `session_lifetime`, so that nothing a visitor of the old share holds (a session,
 * a bookmark that logs them in again) meets another account's share under the same name while it
 * could still matter. `public_frontend.token_quarantine` changes it.
 */
export const TOKEN_QUARANTINE_MS = 7 * 86_400_000;

/**
 * The quarantine for an installation whose frontend's `session_lifetime` is known (one process):
 * the default, or a day more than the session lifetime when that is longer.
 */
export function quarantineFor(sessionLifetimeMs: number | undefined): number {
  return Math.max(TOKEN_QUARANTINE_MS, (sessionLifetimeMs ?? 0) + 86_400_000);
}

/**
 * The quarantine of freed share tokens (docs/security.md, "Share tokens between accounts"): when an
 * account withdraws a share, its token is reserved to that account until the quarantine ends, and
 * any other account's claim is refused with 409 `share_token_quarantined`. Reservations are kept in
 * the registry's store (so a restart keeps them) and removed once they end, so the store holds at
 * most the tokens freed within one quarantine.
 */
export class TokenQuarantine {
  private readonly store: RegistrationStore;
  private readonly clock: Clock;
  private readonly logger: Logger;
  readonly durationMs: number;
  private readonly held = new Map<string, TokenReservation>();

  private constructor(store: RegistrationStore, durationMs: number, clock: Clock, logger: Logger) {
    this.store = store;
    this.durationMs = durationMs;
    this.clock = clock;
    this.logger = logger;
  }

  /** Loads the reservations still in force; ended ones are removed from the store. */
  static async open(
    store: RegistrationStore,
    logger: Logger,
    options: { durationMs?: number; clock?: Clock } = {},
  ): Promise<TokenQuarantine> {
    const quarantine = new TokenQuarantine(
      store,
      options.durationMs ?? TOKEN_QUARANTINE_MS,
      options.clock ?? systemClock,
      logger,
    );
    for (const reservation of await store.listReservations()) quarantine.held.set(reservation.token, reservation);
    await quarantine.sweep();
    return quarantine;
  }

  /** Throws 409 `share_token_quarantined` when another account freed `token` and its quarantine runs. */
  check(token: string, accountId: string): void {
    const reservation = this.held.get(token);
    if (!reservation || reservation.accountId === accountId || !this.inForce(reservation)) return;
    this.logger.warn(
      { share: token, account: accountId, reservedTo: reservation.accountId, until: reservation.until },
      'registry: refused a share token freed by another account (quarantine)',
    );
    throw new SvcError(
      'share_token_quarantined',
      `share token ${token} was freed by another account and is reserved to it until ${reservation.until} ` +
        `(quarantine ${formatDuration(this.durationMs)}); use another token`,
      { status: 409 },
    );
  }

  /** Reserves freed tokens to the account that freed them, for the quarantine from now. */
  async reserve(tokens: readonly string[], accountId: string): Promise<void> {
    const until = new Date(this.clock.now() + this.durationMs).toISOString();
    for (const token of tokens) {
      const reservation: TokenReservation = { token, accountId, until };
      await this.store.putReservation(reservation);
      this.held.set(token, reservation);
    }
    await this.sweep();
  }

  /** The token is in use again (by the account it was reserved to, or after its quarantine). */
  async release(token: string): Promise<void> {
    if (!this.held.has(token)) return;
    await this.store.deleteReservation(token);
    this.held.delete(token);
  }

  private inForce(reservation: TokenReservation): boolean {
    return Date.parse(reservation.until) > this.clock.now();
  }

  /** Removes the reservations whose quarantine has ended. */
  private async sweep(): Promise<void> {
    for (const reservation of [...this.held.values()]) {
      if (!this.inForce(reservation)) await this.release(reservation.token);
    }
  }
}
