import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { systemClock, type Clock } from '../lib/clock.ts';

/**
 * Authenticated envelope for everything the frontend hands to a browser (session cookie, login
 * cookie, OAuth `state`, login start ticket, session hand-over ticket): the JSON payload is encrypted with AES-256-GCM under a key derived from
 * `encryption_key`, then the ciphertext is signed with HMAC-SHA256 under a key derived from
 * `signing_key`. The purpose ("session", "state", "login", "start", "handover") is bound into both, so a value minted for
 * one use is rejected for any other. Expiry travels inside the encrypted payload.
 */
export interface Sealer {
  seal(purpose: Purpose, payload: object, expiresAtMs: number): string;
  /** The payload, or undefined for anything forged, corrupted, expired, or minted for another purpose. */
  open<T>(purpose: Purpose, sealed: string | undefined, nowMs?: number): T | undefined;
}

export type Purpose = 'session' | 'state' | 'login' | 'start' | 'handover';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAC_BYTES = 32;

export function createSealer(signingKey: string, encryptionKey: string, clock: Clock = systemClock): Sealer {
  // KeyObjects, not raw buffers: every request opens a cookie, and re-importing a raw key on each
  // cipher/HMAC call cost ~70 µs per request (measured, docs/benchmarks-history.md).
  const encKey = createSecretKey(Buffer.from(hkdfSync('sha256', encryptionKey, 'svc-seal', 'svc aes-256-gcm v1', 32)));
  const macKey = createSecretKey(Buffer.from(hkdfSync('sha256', signingKey, 'svc-seal', 'svc hmac-sha256 v1', 32)));

  const mac = (purpose: Purpose, body: Buffer): Buffer =>
    createHmac('sha256', macKey).update(`${VERSION}.${purpose}.`).update(body).digest();

  return {
    seal(purpose, payload, expiresAtMs) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', encKey, iv);
      cipher.setAAD(Buffer.from(`${VERSION}.${purpose}`));
      const plain = Buffer.from(JSON.stringify({ p: payload, e: expiresAtMs }));
      const body = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
      return Buffer.concat([body, mac(purpose, body)]).toString('base64url');
    },

    open<T>(purpose: Purpose, sealed: string | undefined, nowMs = clock.now()): T | undefined {
      if (!sealed || sealed.length > 8192 || !/^[A-Za-z0-9_-]+$/.test(sealed)) return undefined;
      const raw = Buffer.from(sealed, 'base64url');
      // Only the one canonical encoding opens: Node's decoder ignores stray trailing characters,
      // so `<value>A` would otherwise be a second, different cookie with the same session.
      if (raw.length < IV_BYTES + TAG_BYTES + MAC_BYTES + 1 || raw.toString('base64url') !== sealed) return undefined;
      const body = raw.subarray(0, raw.length - MAC_BYTES);
      if (!timingSafeEqual(raw.subarray(raw.length - MAC_BYTES), mac(purpose, body))) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', encKey, body.subarray(0, IV_BYTES));
        decipher.setAAD(Buffer.from(`${VERSION}.${purpose}`));
        decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
        const plain = Buffer.concat([
          decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)),
          decipher.final(),
        ]);
        const { p, e } = JSON.parse(plain.toString('utf8')) as { p: T; e: number };
        return typeof e === 'number' && e > nowMs ? p : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
