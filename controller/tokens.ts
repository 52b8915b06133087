import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { newToken } from '../lib/token.ts';

/** A secret token `<prefix>_<id>_<secret>` split into its parts. */
export interface ParsedToken {
  readonly id: string;
  readonly hash: string;
}

const ID = /^[a-z2-7]{12}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

/**
 * A new secret token `<prefix>_<id>_<secret>`: `id` (12 lowercase base32 characters) names the
 * record that holds the token's hash, so a lookup never searches by a secret-derived value;
 * `secret` is 32 random bytes (256 bits, base64url). The prefix (`svca` account, `svce`
 * enrollment) makes a leaked token recognisable to secret scanners.
 */
export function newSecretToken(prefix: 'svca' | 'svce'): { token: string; id: string; hash: string } {
  const id = newToken();
  const token = `${prefix}_${id}_${randomBytes(32).toString('base64url')}`;
  return { token, id, hash: hashToken(token) };
}

/**
 * A new environment token `svcv_<envZId>_<secret>` (`v` for enVironment: `e` is the enrollment's).
 * Its id is the environment's own id, so the tunnel's credential check is one lookup of the
 * environment record that keeps the hash.
 */
export function newEnvironmentToken(envZId: string): { token: string; hash: string } {
  const token = `svcv_${envZId}_${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashToken(token) };
}

/** SHA-256 (hex) of the whole token: what the store keeps. A 256-bit random secret needs no slow hash. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Splits a presented token; undefined when it does not have the shape of a `prefix` token. */
export function parseToken(prefix: 'svca' | 'svce' | 'svcv', token: string): ParsedToken | undefined {
  const parts = token.split('_');
  if (parts.length < 3 || parts[0] !== prefix) return undefined;
  const id = parts[1] ?? '';
  const secret = parts.slice(2).join('_');
  if (!ID.test(id) || !SECRET.test(secret)) return undefined;
  return { id, hash: hashToken(token) };
}

/** Constant-time comparison of two SHA-256 hex digests. */
export function hashesMatch(presentedHash: string, storedHash: string): boolean {
  const a = Buffer.from(presentedHash, 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === 32 && b.length === 32 && timingSafeEqual(a, b);
}
