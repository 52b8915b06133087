import { SvcError, valueOrThrow } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { API_SHARE_FIELDS } from '../lib/share/surfaces.ts';
import { storedOAuth, validateShareSpec } from '../lib/share/validate.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../lib/tunnel/directory.ts';
import type { RegistrySnapshot } from '../lib/tunnel/frontend-api.ts';
import { RegistryRevisions } from './registry-revisions.ts';
import type { RegistrationRecord, RegistrationStore } from './registration-store.ts';
import { environmentOfToken } from './tunnel-api.ts';
import type { ControllerStore, EnvironmentRecord } from './store.ts';

/** A share as an agent publishes it (the `/tunnel/shares/*` request body). */
export interface ShareAnnouncement {
  readonly token: string;
  readonly shareMode: 'public' | 'private';
  readonly backendMode: 'proxy' | 'web';
  readonly oauthProvider?: string;
  readonly oauthEmailAddressPatterns?: readonly string[];
  readonly oauthCheckInterval?: string;
}

/**
 * The share registry: which token belongs to which environment, and how the share is protected. The
 * controller keeps it in its store, so the installation's frontend can route and protect a share
 * without reaching the agent first, and so a token is bound to one environment for good: another
 * environment's claim is refused (409 `share_token_taken`) and logged. Reads come from a map held
 * in memory (the frontend looks up every request); every change is written to the store first.
 */
export class ShareRegistry implements ShareDirectory {
  private readonly store: ControllerStore & RegistrationStore;
  private readonly logger: Logger;
  private readonly providers: readonly string[];
  private readonly shares = new Map<string, PublishedShare>();
  private readonly listeners = new Set<(envZId: string) => void>();
  /** The revision frontends in their own processes long-poll (controller/frontend-api.ts). */
  readonly revisions = new RegistryRevisions();

  private constructor(store: ControllerStore & RegistrationStore, providers: readonly string[], logger: Logger) {
    this.store = store;
    this.providers = providers;
    this.logger = logger;
  }

  /** Loads the registry from the store. `providers`: the frontend's provider names an OAuth share may use. */
  static async open(
    store: ControllerStore & RegistrationStore,
    providers: readonly string[],
    logger: Logger,
  ): Promise<ShareRegistry> {
    const registry = new ShareRegistry(store, providers, logger);
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

  /** Publishes or updates one share of `env`. */
  async register(env: EnvironmentRecord, share: ShareAnnouncement): Promise<void> {
    const record = this.validate(env, share);
    const owner = this.shares.get(record.token);
    if (owner && owner.envZId !== env.envZId) throw this.taken(env, record.token);
    try {
      await this.store.putRegistration(record);
    } catch (err) {
      if (err instanceof SvcError && err.code === 'share_token_taken') throw this.taken(env, record.token);
      throw err;
    }
    this.shares.set(record.token, published(record));
    this.revisions.bump();
    this.logger.info(
      { envZId: env.envZId, share: record.token, shareMode: record.shareMode, oauth: Boolean(record.oauth) },
      'registry: share published',
    );
  }

  async unregister(env: EnvironmentRecord, token: string): Promise<void> {
    if (this.shares.get(token)?.envZId !== env.envZId || !(await this.store.deleteRegistration(token, env.envZId))) {
      throw new SvcError('unknown_share', `share ${token} is not published by this environment`, { status: 404 });
    }
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

  /** `svc disable`: the environment's shares leave the registry and its tunnels are closed. */
  async removeEnvironment(envZId: string): Promise<void> {
    const removed = await this.store.deleteRegistrationsOf(envZId);
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

  /** The one share validator (lib/share/validate.ts) with the API's names; the target stays with the agent. */
  private validate(env: EnvironmentRecord, share: ShareAnnouncement): RegistrationRecord {
    const rules = { providerNames: this.providers, tokenRequired: true, targetElsewhere: true };
    const spec = valueOrThrow(
      validateShareSpec({ ...share }, API_SHARE_FIELDS, rules),
      'invalid_share',
      'invalid share',
      422,
    );
    return {
      token: share.token,
      envZId: env.envZId,
      accountId: env.accountId,
      shareMode: spec.shareMode,
      backendMode: spec.backendMode,
      ...storedOAuth(spec),
      createdAt: new Date().toISOString(),
    };
  }
}

function published(record: RegistrationRecord): PublishedShare {
  return Object.freeze({
    token: record.token,
    envZId: record.envZId,
    accountId: record.accountId,
    shareMode: record.shareMode,
    backendMode: record.backendMode,
    ...(record.oauth ? { oauth: record.oauth } : {}),
  });
}
