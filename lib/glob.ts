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
 * a `]` right after `[` or `[!` is a member, `\` is an ordinary member, and a reversed range
 * (`z-a`) is an error. A class character matches when it or its other ASCII case is in the class.
 *
 * Matching uses no regular expression (a glob from any account must not be able to backtrack
 * exponentially and stall the event loop): the classic wildcard matcher, which on a mismatch
 * resumes only after the most recent `*`. That is correct for globs (a later `*` can absorb
 * everything an earlier one could) and takes at most (address length + 1) × (pattern tokens + 1)
 * steps, linear in the address for a bounded pattern: with the bounds below and the 254-character
 * address limit, at most 255 × 321 steps, whatever the pattern (docs/security.md has the time).
 * A DFA or a bit-parallel NFA would drop the pattern factor, but over Unicode classes it needs
 * tables per character or per class; with the pattern bounded, this one stays simple and small.
 */
export interface EmailGlob {
  readonly source: string;
  matches(email: string): boolean;
}

/** Longest glob a share may list, in characters (code points): the longest address form, 64 + 1 + 255. */
export const EMAIL_GLOB_MAX_LENGTH = 320;
/** Most globs one share may list. */
export const EMAIL_GLOBS_MAX = 64;

/** A glob compiled to parallel arrays (the matcher's inner loop reads only numbers). */
interface Compiled {
  /** Per position: STAR, ANY, LITERAL or CLASS. */
  readonly kinds: Uint8Array;
  /** Per position: the literal's code point (ASCII lower-cased), or the index of its class. */
  readonly values: Int32Array;
  readonly classes: readonly CharClass[];
}

/** A `[...]` class: ASCII members as a bitmap (both cases), all members as inclusive ranges. */
interface CharClass {
  readonly negate: boolean;
  readonly ascii: Uint32Array;
  readonly ranges: Int32Array;
}

/** Compiles a glob; throws an Error naming the problem when the glob is malformed. */
export function compileGlob(source: string): EmailGlob {
  const compiled = parseGlob(source);
  return { source, matches: (email) => matchCompiled(compiled, email).matched };
}

/**
 * The steps the matcher takes for one address (one comparison of a pattern position with an
 * address character, or one skip of a `*`), for the adversarial suite that bounds them.
 */
export function globMatchSteps(source: string, email: string): { matched: boolean; steps: number } {
  return matchCompiled(parseGlob(source), email);
}

/** Number of characters (code points) of a text, the unit of EMAIL_GLOB_MAX_LENGTH. */
export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function parseGlob(source: string): Compiled {
  if (source.length === 0) throw new Error('glob is empty');
  const chars = Array.from(source, (c) => c.codePointAt(0) as number);
  const kinds: number[] = [];
  const values: number[] = [];
  const classes: CharClass[] = [];
  const push = (kind: number, value: number): void => void (kinds.push(kind), values.push(value));
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as number;
    if (c === STAR_CHAR) {
      // `**` means `*`: one position keeps the step bound in terms of the pattern's length.
      if (kinds.at(-1) !== STAR) push(STAR, 0);
    } else if (c === QUESTION_CHAR) push(ANY, 0);
    else if (c === BACKSLASH) {
      const next = chars[++i];
      if (next === undefined) throw new Error(`glob ${JSON.stringify(source)} ends with a lone backslash`);
      push(LITERAL, asciiLower(next));
    } else if (c === OPEN) {
      const parsed = parseClass(chars, i + 1, source);
      push(CLASS, classes.push(parsed.charClass) - 1);
      i = parsed.end;
    } else push(LITERAL, asciiLower(c));
  }
  return { kinds: Uint8Array.from(kinds), values: Int32Array.from(values), classes };
}

/** The class whose body starts at `start` (just after `[`), and the index of its closing `]`. */
function parseClass(chars: readonly number[], start: number, source: string): { charClass: CharClass; end: number } {
  let i = start;
  const negate = chars[i] === BANG;
  if (negate) i++;
  const first = i;
  const ranges: number[] = [];
  const ascii = new Uint32Array(4);
  const addAscii = (cp: number): void => {
    if (cp < 128) ascii[cp >> 5] = (ascii[cp >> 5] as number) | (1 << (cp & 31));
  };
  for (; i < chars.length; i++) {
    const c = chars[i] as number;
    if (c === CLOSE && i > first) {
      return { charClass: { negate, ascii, ranges: Int32Array.from(ranges) }, end: i };
    }
    let to = c;
    const end = chars[i + 2];
    if (chars[i + 1] === DASH && end !== undefined && end !== CLOSE) {
      if (end < c) {
        const range = `${String.fromCodePoint(c)}-${String.fromCodePoint(end)}`;
        throw new Error(`glob ${JSON.stringify(source)} has the reversed range ${range} in a class`);
      }
      to = end;
      i += 2;
    }
    ranges.push(c, to);
    for (let cp = c; cp <= Math.min(to, 127); cp++) {
      addAscii(cp);
      addAscii(asciiOtherCase(cp));
    }
  }
  throw new Error(`glob ${JSON.stringify(source)} has an unclosed '['`);
}

/**
 * Matches the whole address: advance while the position `p` accepts the character at `t`; on a
 * mismatch go back to just after the last `*`, which now absorbs one more character. Each step
 * moves `p` forward, or restarts with the last `*`'s start one character further, hence the bound.
 */
function matchCompiled(glob: Compiled, email: string): { matched: boolean; steps: number } {
  const { kinds, values, classes } = glob;
  const text = Array.from(email, (c) => c.codePointAt(0) as number);
  const n = text.length;
  const m = kinds.length;
  let t = 0;
  let p = 0;
  let starP = -1;
  let starT = 0;
  let steps = 0;
  while (t < n) {
    steps++;
    const kind = p < m ? (kinds[p] as number) : NONE;
    if (kind === STAR) {
      starP = ++p;
      starT = t;
      continue;
    }
    const cp = text[t] as number;
    let accepted: boolean;
    if (kind === LITERAL) accepted = values[p] === asciiLower(cp);
    else if (kind === ANY) accepted = true;
    else if (kind === CLASS) accepted = inClass(classes[values[p] as number] as CharClass, cp);
    else accepted = false;
    if (accepted) {
      p++;
      t++;
    } else if (starP >= 0) {
      p = starP;
      t = ++starT;
    } else return { matched: false, steps };
  }
  while (p < m && kinds[p] === STAR) {
    steps++;
    p++;
  }
  return { matched: p === m, steps };
}

/** Whether a class accepts a character, or its other ASCII case. */
function inClass(charClass: CharClass, cp: number): boolean {
  let member: boolean;
  if (cp < 128) member = (((charClass.ascii[cp >> 5] as number) >>> (cp & 31)) & 1) === 1;
  else {
    member = false;
    const ranges = charClass.ranges;
    for (let i = 0; i < ranges.length; i += 2) {
      if (cp >= (ranges[i] as number) && cp <= (ranges[i + 1] as number)) {
        member = true;
        break;
      }
    }
  }
  return member !== charClass.negate;
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

const STAR_CHAR = 0x2a;
const QUESTION_CHAR = 0x3f;
const BACKSLASH = 0x5c;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const BANG = 0x21;
const DASH = 0x2d;

/** Kinds of a compiled position (NONE: past the end of the pattern). */
const NONE = 0;
const STAR = 1;
const ANY = 2;
const LITERAL = 3;
const CLASS = 4;
