import { createHash, randomBytes } from 'node:crypto';

/**
 * Share and access tokens are the first DNS label of a share's host, so both kinds below use one
 * alphabet: lower-case letters and digits (RFC 4648 base32, lower-cased). 32 symbols, so five bits
 * per character and `byte & 31` is unbiased.
 */
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const TOKEN_LENGTH = 12;

/** A fresh share or access token: 12 random characters (60 bits), which cannot be guessed. */
export function newToken(length = TOKEN_LENGTH): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += ALPHABET[b & 31];
  return out;
}

/**
 * The token of a Share object that does not name one: the first 12 base32 characters of
 * sha256(metadata.uid). Deterministic, so every reconcile (and every operator replica) derives the
 * same token.
 */
export function deriveToken(uid: string): string {
  const digest = createHash('sha256').update(uid).digest();
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < TOKEN_LENGTH) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length === TOKEN_LENGTH) break;
    value &= (1 << bits) - 1;
  }
  return out;
}
