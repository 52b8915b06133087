import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
export const TOKEN_LENGTH = 12;

/**
 * A fresh share or access token: 12 characters from a 32-character alphabet (60 random bits),
 * lower-case letters and digits only, so it is a valid DNS label (the first label of the share's
 * host) and cannot be guessed. 256 is a multiple of 32, so `byte & 31` is unbiased.
 */
export function newToken(length = TOKEN_LENGTH): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += ALPHABET[b & 31];
  return out;
}
