/**
 * Email address globs (`*@example.com`, `alice?@*.example.org`, `[ab]*@x.io`). The pattern is
 * anchored to the whole address and compared case-insensitively, so `*@example.com` never admits
 * `eve@example.com.evil.io`. Case is folded for ASCII letters only: Unicode case folding would let
 * look-alikes through (`/k/iu` matches the Kelvin sign U+212A, `/s/iu` the long s U+017F), and an
 * address at `\u212Aernel.org` is not one at `kernel.org`. Supported: `*` (any run), `?` (one character), `[...]` / `[!...]`
 * (character class); `\` escapes the next character.
 */
export interface EmailGlob {
  readonly source: string;
  matches(email: string): boolean;
}

/** Compiles a glob; throws an Error naming the problem when the glob is malformed. */
export function compileGlob(source: string): EmailGlob {
  if (source.length === 0) throw new Error('glob is empty');
  let re = '';
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else if (c === '\\') {
      const next = source[++i];
      if (next === undefined) throw new Error(`glob ${JSON.stringify(source)} ends with a lone backslash`);
      re += escapeRegExp(next);
    } else if (c === '[') {
      const end = source.indexOf(']', i + 2);
      if (end === -1) throw new Error(`glob ${JSON.stringify(source)} has an unclosed '['`);
      let body = source.slice(i + 1, end);
      const negate = body.startsWith('!');
      if (negate) body = body.slice(1);
      re += `[${negate ? '^' : ''}${body.replace(/[\\\]^]/g, '\\$&')}]`;
      i = end;
    } else re += escapeRegExp(c);
  }
  const regex = new RegExp(`^${asciiLower(re)}$`, 'su');
  return { source, matches: (email) => regex.test(asciiLower(email)) };
}

/** Lower-cases A–Z and nothing else. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 32));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
