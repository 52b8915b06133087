import { describe, expect, it } from 'vitest';
import { ConfigReader } from '../../lib/config-reader.ts';
import { ConfigError, problemText } from '../../lib/errors.ts';
import { DEFAULT_CONSOLE_SESSION_MS, readConsoleConfig } from './config.ts';

const read = (value: unknown) => {
  const r = new ConfigReader();
  const config = readConsoleConfig(r, value);
  r.finish('test.yaml');
  return config;
};

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
      'console.colour: unknown field (known: public_url, admins, session_lifetime, oauth_sign_in)',
      'console.public_url: must be an origin without a path',
      'console.admins[0]: must be an email address, got "nobody"',
      'console.session_lifetime: must be a duration such as 5m, 6h or 24h, got "soon"',
    ]);
  });
});
