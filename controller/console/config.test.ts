import { describe, expect, it } from 'vitest';
import { ConfigReader } from '../../lib/config-reader.ts';
import { ConfigError, problemText } from '../../lib/errors.ts';
import { DEFAULT_CONSOLE_SESSION_MS, readConsoleConfig } from './config.ts';

const read = (value: unknown, options: { oauth?: boolean } = {}) => {
  const r = new ConfigReader();
  const config = readConsoleConfig(r, value, options);
  r.finish('test.yaml');
  return config;
};

/** The problems `read` reports, as text. */
const problemsOf = (value: unknown, options: { oauth?: boolean } = {}) => {
  try {
    read(value, options);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map(problemText);
    throw err;
  }
  return [];
};

const SECRET = 'client-secret-never-echoed-0123';
const provider = {
  name: 'corp',
  type: 'oidc',
  issuer: 'https://id.example.com',
  client_id: 'svc',
  client_secret: SECRET,
  scopes: ['openid', 'email'],
  supports_pkce: true,
};
const keys = { signing_key: 's'.repeat(32), encryption_key: 'e'.repeat(24) };

describe('console config', () => {
  it('defaults: no admins, 8h sessions, OAuth sign-in on', () => {
    expect(read(undefined)).toEqual({ admins: [], sessionLifetimeMs: DEFAULT_CONSOLE_SESSION_MS, oauthSignIn: true });
  });

  it('reads admins (lower-cased), the public URL and the session lifetime', () => {
    const config = read({
      admins: ['Root@Example.com'],
      public_url: 'https://api.example.com',
      session_lifetime: '1h',
    });
    expect(config).toMatchObject({ admins: ['root@example.com'], sessionLifetimeMs: 3_600_000 });
    expect(config.publicUrl?.origin).toBe('https://api.example.com');
  });

  it('reports every problem with its field path', () => {
    let error: unknown;
    try {
      read({ admins: ['nobody'], public_url: 'https://api.example.com/console', session_lifetime: 'soon', colour: 1 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map(problemText)).toEqual([
      'console.colour: unknown field (known: public_url, admins, session_lifetime, oauth_sign_in, oauth)',
      'console.public_url: must be an origin without a path',
      'console.admins[0]: must be an email address, got "nobody"',
      'console.session_lifetime: must be a duration such as 5m, 6h or 24h, got "soon"',
    ]);
  });

  it('reads console.oauth where allowed: providers in the frontend format and the sealing keys', () => {
    const config = read({ oauth: { ...keys, providers: [provider] } }, { oauth: true });
    expect(config.oauth?.providers.map((p) => p.name)).toEqual(['corp']);
    expect(config.oauth).toMatchObject({ signingKey: keys.signing_key, encryptionKey: keys.encryption_key });
  });

  it('reports every console.oauth problem at once, never quoting a client secret', () => {
    const problems = problemsOf(
      { oauth: { signing_key: 'short', encryption_key: 7, providers: [{ ...provider, type: 'saml' }], extra: 1 } },
      { oauth: true },
    );
    expect(problems).toEqual([
      'console.oauth.extra: unknown field (known: providers, signing_key, encryption_key)',
      expect.stringMatching(/^console\.oauth\.signing_key: /),
      expect.stringMatching(/^console\.oauth\.encryption_key: /),
      'console.oauth.providers[0].type: must be one of idp1, idp2, oidc, got "saml"',
      'console.oauth.providers[0].issuer: only applies to type oidc',
      'console.oauth.providers[0].supports_pkce: only applies to type oidc',
    ]);
    expect(problems.join('\n')).not.toContain(SECRET);
    expect(problemsOf({ oauth: { ...keys } }, { oauth: true })).toEqual([
      'console.oauth.providers: required: at least one provider',
    ]);
  });

  it("refuses console.oauth in the installation's config, which signs in with its own oauth section", () => {
    expect(problemsOf({ oauth: { ...keys, providers: [provider] } })).toEqual([
      "console.oauth: only svc controller without a frontend or oauth section takes it: the installation's console signs in with its oauth section",
    ]);
  });
});
