import { describe, expect, it } from 'vitest';
import { compileGlob } from '../lib/glob.ts';
import { isSingleMailbox, refusalReason } from './email.ts';

const share = (patterns: string[]) => ({ provider: 'p', checkIntervalMs: 1, emailPatterns: patterns.map(compileGlob) });

describe('email admission', () => {
  it('admits case-insensitively and anchors globs to the whole address', () => {
    expect(refusalReason({ email: 'ALICE@Example.COM', verified: true }, share(['*@example.com']))).toBeUndefined();
    expect(refusalReason({ email: 'eve@example.com.evil.io', verified: true }, share(['*@example.com']))).toMatch(
      /not allowed/,
    );
    expect(refusalReason({ email: 'eve@evil.io', verified: true }, share(['*@example.com', 'eve@*']))).toBeUndefined();
  });

  it('refuses unverified addresses and anything but exactly one @', () => {
    expect(refusalReason({ email: 'alice@example.com', verified: false }, share([]))).toMatch(/not verified/);
    expect(refusalReason({ email: 'a@b@example.com', verified: true }, share(['*@example.com']))).toMatch(
      /invalid email/,
    );
    for (const bad of ['', '@example.com', 'alice@', 'alice', 'a b@example.com', 'a\n@example.com'])
      expect(isSingleMailbox(bad)).toBe(false);
  });
});
