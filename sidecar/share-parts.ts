import { SHARE_TOKEN } from '../lib/share/spec.ts';

/**
 * A cookie value (or `state` parameter) made of entries each sealed under one share's keys:
 * `<token>~<sealed>` parts joined by `.`. The token travels in clear so that a frontend knows which
 * share's key opens an entry; a share pod opens and rewrites only its own share's entries and passes
 * the others through untouched (it cannot open them).
 */
export interface SharePart {
  readonly token: string;
  readonly sealed: string;
}

/** Parts looked at in one value; a cookie is at most 4000 bytes, so more than this is not a browser's. */
const MAX_PARTS = 64;
const SEALED = /^[A-Za-z0-9_-]+$/;

/** The well-formed parts of a value, in order (malformed ones are left out). */
export function parseParts(value: string | undefined): SharePart[] {
  if (!value) return [];
  const parts: SharePart[] = [];
  for (const text of value.split('.', MAX_PARTS)) {
    const part = parsePart(text);
    if (part) parts.push(part);
  }
  return parts;
}

/** One `<token>~<sealed>` part, or undefined when it is not one. */
export function parsePart(text: string | undefined): SharePart | undefined {
  if (!text) return undefined;
  const at = text.indexOf('~');
  if (at <= 0) return undefined;
  const token = text.slice(0, at);
  const sealed = text.slice(at + 1);
  return SHARE_TOKEN.test(token) && SEALED.test(sealed) ? { token, sealed } : undefined;
}

/**
 * The text of the first part of `value` for `token`, found without checking the others (the hot
 * path: a frontend looks for its own share's entry on every request). Not yet validated.
 */
export function partTextFor(value: string | undefined, token: string): string | undefined {
  if (!value) return undefined;
  const prefix = `${token}~`;
  let start = 0;
  for (let count = 0; count < MAX_PARTS; count++) {
    const end = value.indexOf('.', start);
    if (value.startsWith(prefix, start)) return end < 0 ? value.slice(start) : value.slice(start, end);
    if (end < 0) return undefined;
    start = end + 1;
  }
  return undefined;
}

/** The text of one part. */
export function partText(part: SharePart): string {
  return `${part.token}~${part.sealed}`;
}

/** Parts joined into one value. */
export function joinParts(parts: readonly SharePart[]): string {
  return parts.map(partText).join('.');
}
