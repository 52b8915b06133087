/**
 * Email address globs (`*@example.com`, `alice?@*.example.org`, `[ab]*@x.io`). The pattern is
 * anchored to the whole address and compared case-insensitively, so `*@example.com` never admits
 * `eve@example.com.evil.io`. Case is folded for ASCII letters only: Unicode case folding would let
 * look-alikes through (the Kelvin sign U+212A folds to `k`, the long s U+017F to `s`), and an
 * address at `\u212Aernel.org` is not one at `kernel.org`.
 *
 * Syntax: `*` any run of characters (none included), `?` one character, `[...]` one character of
 * the class and `[!...]` one character outside it, `\` makes the next character literal; everything
 * else is literal (`.`, `-`, `+`, `(`, `|`, `$`, `/` and any Unicode character mean themselves).
 * Characters are Unicode code points. In a class, `a-z` is a range (`-` first or last is literal),
 * a `]` right after `[` or `[!` is a member, and `\` is an ordinary member. A class character
 * matches when it or its other ASCII case is in the class as written.
 *
 * Matching uses no regular expression (a glob from any account must not be able to backtrack
 * exponentially and stall the event loop): the classic wildcard matcher, which on a mismatch
 * resumes only after the most recent `*`. That is correct for globs (a later `*` can absorb
 * everything an earlier one could) and takes at most (address length + 1) × (pattern tokens + 1)
 * steps, linear in the address for a bounded pattern: with the bounds below and the 254-character
 * address limit, at most 255 × 321 steps, whatever the pattern (docs/security.md has the time).
 */
export interface EmailGlob {
  readonly source: string;
  matches(email: string): boolean;
}

/** Longest glob a share may list, in characters (code points): the longest address form, 64 + 1 + 255. */
export const EMAIL_GLOB_MAX_LENGTH = 320;
/** Most globs one share may list. */
export const EMAIL_GLOBS_MAX = 64;

/** One position of a compiled glob. */
type Token =
  | { readonly kind: 'literal'; readonly cp: number }
  | { readonly kind: 'any' }
  | { readonly kind: 'star' }
  | { readonly kind: 'class'; readonly negate: boolean; readonly ranges: readonly number[] };

/** Compiles a glob; throws an Error naming the problem when the glob is malformed. */
export function compileGlob(source: string): EmailGlob {
  const tokens = parseGlob(source);
  return { source, matches: (email) => matchTokens(tokens, email).matched };
}

/**
 * The steps the matcher takes for one address (one comparison of a pattern token with an address
 * character, or one skip of a `*`), for the adversarial suite and the benchmark that bound it.
 */
export function globMatchSteps(source: string, email: string): { matched: boolean; steps: number } {
  return matchTokens(parseGlob(source), email);
}

/** Number of characters (code points) of a text, the unit of EMAIL_GLOB_MAX_LENGTH. */
export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function parseGlob(source: string): Token[] {
  if (source.length === 0) throw new Error('glob is empty');
  const chars = Array.from(source, (c) => c.codePointAt(0) as number);
  const tokens: Token[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as number;
    if (c === STAR) {
      // `**` means `*`: one token keeps the step bound in terms of the pattern's length.
      if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' });
    } else if (c === QUESTION) tokens.push({ kind: 'any' });
    else if (c === BACKSLASH) {
      const next = chars[++i];
      if (next === undefined) throw new Error(`glob ${JSON.stringify(source)} ends with a lone backslash`);
      tokens.push({ kind: 'literal', cp: asciiLower(next) });
    } else if (c === OPEN) {
      const parsed = parseClass(chars, i + 1, source);
      tokens.push(parsed.token);
      i = parsed.end;
    } else tokens.push({ kind: 'literal', cp: asciiLower(c) });
  }
  return tokens;
}

/** The class whose body starts at `start` (just after `[`), and the index of its closing `]`. */
function parseClass(chars: readonly number[], start: number, source: string): { token: Token; end: number } {
  let i = start;
  const negate = chars[i] === BANG;
  if (negate) i++;
  const first = i;
  const ranges: number[] = [];
  for (; i < chars.length; i++) {
    const c = chars[i] as number;
    if (c === CLOSE && i > first) return { token: { kind: 'class', negate, ranges }, end: i };
    const to = chars[i + 2];
    if (chars[i + 1] === DASH && to !== undefined && to !== CLOSE) {
      if (to < c) {
        const range = `${String.fromCodePoint(c)}-${String.fromCodePoint(to)}`;
        throw new Error(`glob ${JSON.stringify(source)} has the reversed range ${range} in a class`);
      }
      ranges.push(c, to);
      i += 2;
    } else ranges.push(c, c);
  }
  throw new Error(`glob ${JSON.stringify(source)} has an unclosed '['`);
}

/**
 * Matches the whole address: advance while the token at `p` accepts the character at `t`; on a
 * mismatch go back to just after the last `*`, which now absorbs one more character. Each step
 * moves `t` forward or `p` forward with `t` fixed since the last restart, hence the bound.
 */
function matchTokens(tokens: readonly Token[], email: string): { matched: boolean; steps: number } {
  const text = Array.from(email, (c) => c.codePointAt(0) as number);
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  let steps = 0;
  while (t < text.length) {
    steps++;
    const token = tokens[p];
    if (token?.kind === 'star') {
      starP = ++p;
      starT = t;
    } else if (token && accepts(token, text[t] as number)) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP;
      t = ++starT;
    } else return { matched: false, steps };
  }
  while (tokens[p]?.kind === 'star') {
    steps++;
    p++;
  }
  return { matched: p === tokens.length, steps };
}

function accepts(token: Token, cp: number): boolean {
  switch (token.kind) {
    case 'any':
      return true;
    case 'literal':
      return token.cp === asciiLower(cp);
    case 'class':
      return inClass(token.ranges, cp, asciiOtherCase(cp)) !== token.negate;
    case 'star':
      return false;
  }
}

function inClass(ranges: readonly number[], cp: number, other: number): boolean {
  for (let i = 0; i < ranges.length; i += 2) {
    const from = ranges[i] as number;
    const to = ranges[i + 1] as number;
    if ((cp >= from && cp <= to) || (other >= from && other <= to)) return true;
  }
  return false;
}

/** Lower-cases A–Z and nothing else. */
function asciiLower(cp: number): number {
  return cp >= 0x41 && cp <= 0x5a ? cp + 32 : cp;
}

/** The other case of an ASCII letter; any other character unchanged. */
function asciiOtherCase(cp: number): number {
  if (cp >= 0x41 && cp <= 0x5a) return cp + 32;
  if (cp >= 0x61 && cp <= 0x7a) return cp - 32;
  return cp;
}

const STAR = 0x2a;
const QUESTION = 0x3f;
const BACKSLASH = 0x5c;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const BANG = 0x21;
const DASH = 0x2d;
