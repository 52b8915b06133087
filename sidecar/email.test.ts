import { describe, expect, it } from 'vitest';
import { compileGlob } from '../lib/glob.ts';
import { isSingleMailbox, refusalReason, sessionRefusal } from './email.ts';

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

  it("answers a session's address as refusalReason does, and anew for a share's new configuration", () => {
    const before = share(['*@example.com']);
    expect(sessionRefusal('alice@example.com', before)).toBeUndefined();
    expect(sessionRefusal('eve@evil.io', before)).toMatch(/not allowed/);
    expect(sessionRefusal('a@b@example.com', before)).toMatch(/invalid email/);
    const after = share(['eve@*']);
    expect(sessionRefusal('alice@example.com', after)).toMatch(/not allowed/);
    expect(sessionRefusal('eve@evil.io', after)).toBeUndefined();
  });

  it('keeps answering right past the bound on remembered addresses', () => {
    const oauth = share(['*@example.com']);
    for (let i = 0; i < 3000; i += 1) {
      const domain = i % 2 === 0 ? 'example.com' : 'evil.io';
      expect(sessionRefusal(`user${i}@${domain}`, oauth) === undefined).toBe(i % 2 === 0);
    }
    expect(sessionRefusal('user0@example.com', oauth)).toBeUndefined();
    expect(sessionRefusal('user1@evil.io', oauth)).toMatch(/not allowed/);
  });
});
