import { describe, expect, it } from 'vitest';
import { compileGlob } from './glob.ts';

describe('email globs', () => {
  it.each([
    ['*@example.com', 'bob@example.com', true],
    ['*@example.com', 'bob@sub.example.com', false],
    ['*@*.example.com', 'bob@sub.example.com', true],
    ['a?c@x.io', 'abc@x.io', true],
    ['a?c@x.io', 'ac@x.io', false],
    ['[ab]*@x.io', 'bob@x.io', true],
    ['[!ab]*@x.io', 'bob@x.io', false],
    ['a.b@x.io', 'axb@x.io', false],
    ['\\*@x.io', '*@x.io', true],
    ['(a|b)@x.io', 'a@x.io', false],
    ['*@KERNEL.org', 'bob@kernel.ORG', true],
    ['*@kernel.org', 'bob@\u212Aernel.org', false], // Kelvin sign: no Unicode case folding
    ['*@sysadmins.org', 'bob@\u017Fysadmins.org', false], // long s
  ])('%s against %s is %s', (glob, email, expected) => {
    expect(compileGlob(glob).matches(email)).toBe(expected);
  });

  it('rejects malformed globs with the reason', () => {
    expect(() => compileGlob('[abc')).toThrow(/unclosed '\['/);
    expect(() => compileGlob('abc\\')).toThrow(/lone backslash/);
    expect(() => compileGlob('')).toThrow(/empty/);
  });
});
