import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Adapter, AdapterPayload, JWK } from 'oidc-provider';

/**
 * In-memory storage for the development identity provider's artifacts (codes, tokens, sessions,
 * grants). oidc-provider ships one for quick starts and warns on every start; this one is the same
 * idea, owned here, so `svc serve --dev` starts quietly. It forgets everything on restart, which is
 * what a development provider should do.
 */
export function devStore(): new (model: string) => Adapter {
  // One map per provider instance: two development providers in one process share nothing.
  const items = new Map<string, { payload: AdapterPayload; expiresAt: number }>();
  return class DevStore implements Adapter {
    private readonly model: string;

    constructor(model: string) {
      this.model = model;
    }

    private key(id: string): string {
      return `${this.model}:${id}`;
    }

    upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      items.set(this.key(id), { payload, expiresAt: Date.now() + expiresIn * 1000 });
      return Promise.resolve();
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      const item = items.get(this.key(id));
      if (!item) return Promise.resolve(undefined);
      if (item.expiresAt <= Date.now()) {
        items.delete(this.key(id));
        return Promise.resolve(undefined);
      }
      return Promise.resolve(item.payload);
    }

    findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      return this.findWhere((p) => p.userCode === userCode);
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.findWhere((p) => p.uid === uid);
    }

    async consume(id: string): Promise<void> {
      const payload = await this.find(id);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }

    destroy(id: string): Promise<void> {
      items.delete(this.key(id));
      return Promise.resolve();
    }

    revokeByGrantId(grantId: string): Promise<void> {
      for (const [key, item] of items) if (item.payload.grantId === grantId) items.delete(key);
      return Promise.resolve();
    }

    private findWhere(match: (payload: AdapterPayload) => boolean): Promise<AdapterPayload | undefined> {
      const now = Date.now();
      for (const [key, item] of items) {
        if (!key.startsWith(`${this.model}:`) || item.expiresAt <= now) continue;
        if (match(item.payload)) return Promise.resolve(item.payload);
      }
      return Promise.resolve(undefined);
    }
  };
}

/** A fresh RS256 signing key for the development provider's ID tokens (per start, never stored). */
export function devSigningKeys(): { keys: JWK[] } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' }) as JWK;
  return { keys: [{ ...jwk, alg: 'RS256', use: 'sig', kid: randomBytes(8).toString('hex') }] };
}

/** Artifact lifetimes (seconds) of the development provider. */
export const DEV_TTL = {
  AuthorizationCode: 60,
  IdToken: 3600,
  RefreshToken: 14 * 24 * 3600,
  Interaction: 3600,
  Session: 14 * 24 * 3600,
  Grant: 14 * 24 * 3600,
} as const;
