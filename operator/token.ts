import { createHash } from 'node:crypto';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/**
 * The token of a Share that does not name one: the first 12 characters of the lower-case base32
 * encoding of sha256(metadata.uid). Deterministic, so every reconcile (and every operator replica)
 * derives the same token, and a DNS label (letters and digits only).
 */
export function deriveToken(uid: string): string {
  const digest = createHash('sha256').update(uid).digest();
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of digest) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5 && out.length < 12) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length === 12) break;
    value &= (1 << bits) - 1;
  }
  return out;
}
