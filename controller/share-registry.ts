import { randomBytes } from 'node:crypto';
import type { Clock } from '../lib/clock.ts';
import { SvcError, valueOrThrow } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { API_SHARE_FIELDS } from '../lib/share/surfaces.ts';
import type { BackendMode } from '../lib/share/spec.ts';
import { storedOAuth, validateShareSpec } from '../lib/share/validate.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../lib/tunnel/directory.ts';
import type { RegistrySnapshot } from '../lib/tunnel/frontend-api.ts';
import { RegistryRevisions } from './registry-revisions.ts';
import type { RegistrationRecord, RegistrationStore } from './registration-store.ts';
import { environmentOfToken } from './tunnel-api.ts';
import type { ControllerStore, EnvironmentRecord } from './store.ts';
import { TokenQuarantine } from './token-quarantine.ts';

export { TOKEN_QUARANTINE_MS, quarantineFor } from './token-quarantine.ts';

/** Options of the share registry; the defaults are the production ones. */
export interface ShareRegistryOptions {
  /** How long a freed token stays reserved to its account (default TOKEN_QUARANTINE_MS). */
  readonly quarantineMs?: number;
  readonly clock?: Clock;
  /** Tokens of the installation's own hosts (lib/share/reserved-tokens.ts): refused, 422 `invalid_share`. */
  readonly reservedTokens?: ReadonlyMap<string, string>;
}

/** A share as an agent publishes it (the `/tunnel/shares/*` request body). */
export interface ShareAnnouncement {
  readonly token: string;
  readonly shareMode: 'public' | 'private';
  readonly backendMode: BackendMode;
  readonly oauthProvider?: string;
  readonly oauthEmailAddressPatterns?: readonly string[];
  readonly oauthCheckInterval?: string;
}

/**
 * The share registry: which token belongs to which environment, and how the share is protected. The
 * controller keeps it in its store, so the installation's frontend can route and protect a share
 * without reaching the agent first, and so a token is bound to one environment for good: another
 * environment's claim is refused (409 `share_token_taken`) and logged. A token never passes from
 * one account to another silently: once freed it stays reserved to its account for a quarantine
 * (controller/token-quarantine.ts), and every registration of a token is a new share instance, so
 * the frontend never accepts a session made for an earlier holder of the token. Reads come from a
 * map held in memory (the frontend looks up every request); every change is written to the store
 * first.
 */
export class ShareRegistry implements ShareDirectory {
  private readonly store: ControllerStore & RegistrationStore;
  private readonly logger: Logger;
  private readonly providers: readonly string[];
  private readonly quarantine: TokenQuarantine;
  private readonly reserved: ReadonlyMap<string, string>;
  private readonly shares = new Map<string, PublishedShare>();
  private readonly listeners = new Set<(envZId: string) => void>();
  /** The revision frontends in their own processes long-poll (controller/frontend-api.ts). */
  readonly revisions = new RegistryRevisions();

  private constructor(
    store: ControllerStore & RegistrationStore,
    providers: readonly string[],
    logger: Logger,
    quarantine: TokenQuarantine,
    reserved: ReadonlyMap<string, string>,
  ) {
    this.reserved = reserved;
    this.store = store;
    this.providers = providers;
    this.logger = logger;
    this.quarantine = quarantine;
  }

  /** Loads the registry from the store. `providers`: the frontend's provider names an OAuth share may use. */
  static async open(
    store: ControllerStore & RegistrationStore,
    providers: readonly string[],
    logger: Logger,
    options: ShareRegistryOptions = {},
  ): Promise<ShareRegistry> {
    const quarantine = await TokenQuarantine.open(store, logger, {
      ...(options.quarantineMs !== undefined ? { durationMs: options.quarantineMs } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const registry = new ShareRegistry(store, providers, logger, quarantine, options.reservedTokens ?? new Map());
    for (const record of await store.listRegistrations()) registry.shares.set(record.token, published(record));
    return registry;
  }

  get providerNames(): readonly string[] {
    return this.providers;
  }

  lookup(token: string): PublishedShare | undefined {
    return this.shares.get(token);
  }

  async authenticate(environmentToken: string): Promise<EnvironmentIdentity | undefined> {
    const env = await this.environmentOf(environmentToken);
    return env ? { envZId: env.envZId, accountId: env.accountId } : undefined;
  }

  /** The environment an environment token proves, or undefined (constant-time hash comparison). */
  environmentOf(environmentToken: string): Promise<EnvironmentRecord | undefined> {
    return environmentOfToken(this.store, environmentToken);
  }

  /** Every registered share, the revision they are at, and the recent revocations. */
  snapshot(): RegistrySnapshot {
    return { revision: this.revisions.current, shares: [...this.shares.values()], ...this.revisions.revoked() };
  }

  onRevoked(listener: (envZId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Publishes or updates one share of `env`. An update keeps the share's instance; a token that is
   * not registered becomes a new share instance, and one freed by another account is refused while
   * its quarantine runs.
   */
  async register(env: EnvironmentRecord, share: ShareAnnouncement): Promise<void> {
    const owner = this.shares.get(share.token);
    const record = this.validate(env, share, owner?.instance);
    if (owner && owner.envZId !== env.envZId) throw this.taken(env, record.token);
    if (!owner) this.quarantine.check(record.token, env.accountId);
    try {
      await this.store.putRegistration(record);
    } catch (err) {
      if (err instanceof SvcError && err.code === 'share_token_taken') throw this.taken(env, record.token);
      throw err;
    }
    this.shares.set(record.token, published(record));
    this.revisions.bump();
    await this.quarantine.release(record.token);
    this.logger.info(
      { envZId: env.envZId, share: record.token, shareMode: record.shareMode, oauth: Boolean(record.oauth) },
      'registry: share published',
    );
  }

  async unregister(env: EnvironmentRecord, token: string): Promise<void> {
    if (this.shares.get(token)?.envZId !== env.envZId) throw unknownShare(token);
    // Reserved before it is freed: a crash in between leaves a reservation to the owner, never a gap.
    await this.quarantine.reserve([token], env.accountId);
    if (!(await this.store.deleteRegistration(token, env.envZId))) throw unknownShare(token);
    this.shares.delete(token);
    this.revisions.bump();
    this.logger.info({ envZId: env.envZId, share: token }, 'registry: share withdrawn');
  }

  /**
   * Makes the registry hold exactly `shares` for `env` (an agent that comes back reconciles): shares
   * it no longer has are withdrawn, the others registered; refusals are returned, not thrown.
   */
  async sync(
    env: EnvironmentRecord,
    shares: readonly ShareAnnouncement[],
  ): Promise<{ published: string[]; refused: { token: string; code: string; message: string }[] }> {
    const wanted = new Set(shares.map((s) => s.token));
    for (const [token, entry] of [...this.shares]) {
      if (entry.envZId === env.envZId && !wanted.has(token)) await this.unregister(env, token);
    }
    const published: string[] = [];
    const refused: { token: string; code: string; message: string }[] = [];
    for (const share of shares) {
      try {
        await this.register(env, share);
        published.push(share.token);
      } catch (err) {
        if (!(err instanceof SvcError) || err.status >= 500) throw err;
        refused.push({ token: share.token, code: err.code, message: err.message });
      }
    }
    return { published, refused };
  }

  /**
   * `svc disable`: the environment's shares leave the registry (their tokens reserved to its account)
   * and its tunnels are closed.
   */
  async removeEnvironment(envZId: string): Promise<void> {
    const held = [...this.shares.values()].filter((s) => s.envZId === envZId);
    const accountId = (await this.store.getEnvironment(envZId))?.accountId ?? held[0]?.accountId;
    if (accountId)
      await this.quarantine.reserve(
        held.map((s) => s.token),
        accountId,
      );
    const removed = await this.store.deleteRegistrationsOf(envZId);
    if (accountId)
      await this.quarantine.reserve(
        removed.filter((t) => !this.shares.has(t)),
        accountId,
      );
    for (const token of removed) this.shares.delete(token);
    for (const [token, entry] of [...this.shares]) if (entry.envZId === envZId) this.shares.delete(token);
    this.revisions.revoke(envZId);
    for (const listener of this.listeners) listener(envZId);
    this.logger.info({ envZId, shares: removed.length }, 'registry: environment removed');
  }

  private taken(env: EnvironmentRecord, token: string): SvcError {
    this.logger.warn(
      { envZId: env.envZId, share: token, owner: this.shares.get(token)?.envZId },
      'registry: refused a share token owned by another environment',
    );
    return new SvcError('share_token_taken', `share token ${token} belongs to another environment`, { status: 409 });
  }

  /**
   * The one share validator (lib/share/validate.ts) with the API's names; the target stays with the
   * agent. `instance`: the share's when it is already registered, else a new one is minted.
   */
  private validate(env: EnvironmentRecord, share: ShareAnnouncement, instance?: string): RegistrationRecord {
    const rules = {
      providerNames: this.providers,
      tokenRequired: true,
      targetElsewhere: true,
      reservedTokens: this.reserved,
    };
    const spec = valueOrThrow(
      validateShareSpec({ ...share }, API_SHARE_FIELDS, rules),
      'invalid_share',
      'invalid share',
      422,
    );
    return {
      token: share.token,
      instance: instance ?? randomBytes(16).toString('base64url'),
      envZId: env.envZId,
      accountId: env.accountId,
      shareMode: spec.shareMode,
      backendMode: spec.backendMode,
      ...storedOAuth(spec),
      createdAt: new Date().toISOString(),
    };
  }
}

function unknownShare(token: string): SvcError {
  return new SvcError('unknown_share', `share ${token} is not published by this environment`, { status: 404 });
}

/**
 * The registry entry of a stored record. A record stored without an instance (written before
 * instances existed) gets one from its account and registration time: stable across restarts, and
 * different for the next share that takes the token.
 */
function published(record: RegistrationRecord): PublishedShare {
  return Object.freeze({
    token: record.token,
    instance: (record.instance as string | undefined) ?? `${record.accountId}.${record.createdAt}`,
    envZId: record.envZId,
    accountId: record.accountId,
    shareMode: record.shareMode,
    backendMode: record.backendMode,
    ...(record.oauth ? { oauth: record.oauth } : {}),
  });
}
