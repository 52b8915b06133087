import { describe, expect, it } from 'vitest';
import { testSession } from '../test/support/session.ts';
import { sessionCookies, type Session } from './session.ts';
import { credentialMatches, deriveShareCredential, deriveShareKeys, type ShareIdentity } from '../lib/share-keys.ts';
import { installationKeyRing, shareKeyRing } from './share-keys.ts';

const INSTALLATION = { signingKey: 's'.repeat(32), encryptionKey: 'e'.repeat(24) };
const A: ShareIdentity = { token: 'alpha', instance: 'uid-a' };
const B: ShareIdentity = { token: 'beta', instance: 'uid-b' };
const options = { domain: 'example.com', secure: true };
const session = (share: ShareIdentity): Session =>
  testSession({ share: share.token, instance: share.instance, provider: 'corp' });
const cookieOf = (set: string): string => set.split(';')[0] ?? '';
const only = (own: ShareIdentity) => (share: ShareIdentity) =>
  share.token === own.token && share.instance === own.instance;

describe('per-share keys', () => {
  const installation = sessionCookies(installationKeyRing(INSTALLATION), 'svc-auth-session', options);
  const podA = sessionCookies(shareKeyRing(deriveShareKeys(INSTALLATION, A), only(A)), 'svc-auth-session', options);
  const podB = sessionCookies(shareKeyRing(deriveShareKeys(INSTALLATION, B), only(B)), 'svc-auth-session', options);

  it('differ per share, per instance, and from the installation keys', () => {
    const a = deriveShareKeys(INSTALLATION, A);
    const values = [
      a.signingKey,
      a.encryptionKey,
      deriveShareKeys(INSTALLATION, B).signingKey,
      deriveShareKeys(INSTALLATION, B).encryptionKey,
      deriveShareKeys(INSTALLATION, { ...A, instance: 'uid-a2' }).signingKey,
      deriveShareCredential(INSTALLATION, A),
      INSTALLATION.signingKey,
      INSTALLATION.encryptionKey,
    ];
    expect(new Set(values).size).toBe(values.length);
    expect(deriveShareKeys(INSTALLATION, A)).toEqual(a);
  });

  it('let the installation open every share’s entry and a share pod only its own', () => {
    const both = installation.write(session(B), cookieOf(installation.write(session(A), undefined)));
    const header = cookieOf(both);
    expect(installation.read(header, A)?.share).toBe('alpha');
    expect(installation.read(header, B)?.share).toBe('beta');
    expect(podA.read(header, A)?.share).toBe('alpha');
    expect(podA.read(header, B)).toBeUndefined();
    expect(podB.read(header, B)?.share).toBe('beta');
    expect(podB.read(header, A)).toBeUndefined();
  });

  it('let a share pod mint nothing for another share: its entry labelled B does not open as B', () => {
    expect(() => podA.write(session(B), undefined)).toThrow(/no keys for share beta/);
    // The forger's best try: a session for B sealed under A's keys, put in B's place in the cookie.
    const forged = cookieOf(podA.write(session(A), undefined)).replace(
      'svc-auth-session=alpha~',
      'svc-auth-session=beta~',
    );
    expect(installation.read(forged, B)).toBeUndefined();
    expect(podB.read(forged, B)).toBeUndefined();
  });

  it('pass other shares’ entries through untouched when a share pod rewrites the cookie', () => {
    const withB = cookieOf(installation.write(session(B), undefined));
    const rewritten = cookieOf(podA.write(session(A), withB));
    expect(rewritten).toContain(withB.slice('svc-auth-session='.length));
    expect(installation.read(rewritten, B)?.share).toBe('beta');
    expect(installation.read(rewritten, A)?.share).toBe('alpha');
  });

  it('derive a credential the auth endpoint recomputes, compared in constant time', () => {
    const credential = deriveShareCredential(INSTALLATION, A);
    expect(credentialMatches(credential, deriveShareCredential(INSTALLATION, A))).toBe(true);
    expect(credentialMatches(credential, deriveShareCredential(INSTALLATION, B))).toBe(false);
    expect(credentialMatches(credential.slice(1), credential)).toBe(false);
  });
});
