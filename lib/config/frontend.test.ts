import { describe, expect, it } from 'vitest';
import { configProblems } from '../../test/support/config-problems.ts';
import { parseFrontendConfig } from './frontend.ts';

const valid = () => ({
  oauth: {
    bind_address: '0.0.0.0:8080',
    endpoint_url: 'https://auth.example.com',
    cookie_name: 'svc-auth-session',
    cookie_domain: 'example.com',
    session_lifetime: '6h',
    intermediate_lifetime: '5m',
    signing_key: 's'.repeat(32),
    encryption_key: 'e'.repeat(24),
    providers: [
      { name: 'google', type: 'idp1', client_id: 'id', client_secret: 'secret' },
      { name: 'github', type: 'idp2', client_id: 'id', client_secret: 'secret' },
      {
        name: 'corp',
        type: 'oidc',
        client_id: 'id',
        client_secret: 'secret',
        scopes: ['openid', 'email'],
        issuer: 'https://idp.example.com',
        supports_pkce: true,
      },
    ],
  },
  shares: [
    {
      token: 'abc123',
      target: 'http://127.0.0.1:3000',
      oauth_provider: 'corp',
      oauth_email_address_patterns: ['*@example.com'],
    },
  ],
});

function problemsOf(doc: unknown): readonly string[] {
  return configProblems(() => parseFrontendConfig(doc, 'test.yaml'));
}

describe('frontend configuration', () => {
  it('accepts the seed example and fills only documented defaults', () => {
    const config = parseFrontendConfig(valid());
    expect(config.oauth.sessionLifetimeMs).toBe(6 * 3600_000);
    expect(config.oauth.intermediateLifetimeMs).toBe(5 * 60_000);
    expect(config.oauth.providers.map((p) => p.type)).toEqual(['idp1', 'idp2', 'oidc']);
    const [idp1, idp2] = config.oauth.providers;
    expect(idp1?.type === 'idp1' && idp1.endpoints.token_url.href).toBe('https://oauth2.googleapis.com/token');
    expect(idp2?.type === 'idp2' && idp2.endpoints.api_base_url.href).toBe('https://api.github.com/');
    expect(config.shares[0]?.oauth?.checkIntervalMs).toBe(3 * 3600_000);
  });

  it('reports every mistake at once, each with its field path', () => {
    const doc = valid();
    const o = doc.oauth as Record<string, unknown>;
    delete o.cookie_name;
    o.signing_key = 'short';
    o.encryption_key = 'tiny';
    o.session_lifetime = 'forever';
    o.bind_address = 'localhost';
    o.endpoint_url = 'not a url';
    o.colour = 'blue';
    o.providers = [
      { name: 'corp', type: 'oidc', client_id: 'id', client_secret: 'secret' },
      { name: 'x', type: 'saml', client_id: 'id' },
      { name: 'corp', type: 'idp1', client_id: 'id', client_secret: 's', issuer: 'https://x' },
    ];
    doc.shares = [
      {
        token: 'Bad_Token',
        target: 'ftp://x',
        oauth_provider: 'nope',
        oauth_email_address_patterns: ['[abc'],
        oauth_check_interval: '3 hours',
      } as never,
    ];
    const problems = problemsOf(doc);
    const expected = [
      'oauth.colour: unknown field',
      'oauth.bind_address: must be ip:port',
      'oauth.endpoint_url: must be an absolute URL',
      'oauth.cookie_name: required',
      'oauth.session_lifetime: must be a duration',
      'oauth.signing_key: must be at least 32 characters',
      'oauth.encryption_key: must be at least 24 characters',
      'oauth.providers[0].scopes: required',
      'oauth.providers[0].issuer: required',
      'oauth.providers[0].supports_pkce: required',
      'oauth.providers[1].type: must be one of idp1, idp2, oidc',
      'oauth.providers[1].client_secret: required',
      'oauth.providers[2].issuer: only applies to type oidc',
      'shares[0].token: must be a DNS label',
      'shares[0].target: must be an http or https URL',
      'shares[0].oauth_email_address_patterns[0]:',
      'shares[0].oauth_check_interval: must be a duration',
    ];
    for (const text of expected)
      expect(
        problems.some((p) => p.startsWith(text)),
        `${text}\n${problems.join('\n')}`,
      ).toBe(true);
  });

  it('has no defaults for the oauth section: an empty one lists every required field', () => {
    const problems = problemsOf({ oauth: {}, shares: [] });
    for (const field of [
      'bind_address',
      'endpoint_url',
      'cookie_name',
      'cookie_domain',
      'session_lifetime',
      'intermediate_lifetime',
      'signing_key',
      'encryption_key',
    ]) {
      expect(problems).toContain(`oauth.${field}: required`);
    }
    expect(problems).toContain('oauth.providers: required: at least one provider');
  });

  it('refuses keys that are equal, a cookie domain that misses the endpoint, and plain http off loopback', () => {
    const doc = valid();
    const o = doc.oauth as Record<string, unknown>;
    o.encryption_key = o.signing_key;
    o.cookie_domain = 'other.org';
    (o.providers as Record<string, unknown>[])[2]!.issuer = 'http://idp.example.com';
    const problems = problemsOf(doc);
    expect(problems).toContain('oauth.encryption_key: must differ from signing_key');
    expect(problems.some((p) => p.startsWith('oauth.cookie_domain: must contain the endpoint_url host'))).toBe(true);
    expect(problems.some((p) => p.includes('plain http on a non-loopback host; set insecure_allow_http'))).toBe(true);
    (o.providers as Record<string, unknown>[])[2]!.insecure_allow_http = true;
    o.encryption_key = 'e'.repeat(24);
    o.cookie_domain = 'example.com';
    expect(problemsOf(doc)).toEqual([]);
  });

  it('gives each provider type exactly its settings, every endpoint resolved at load time', () => {
    const doc = valid();
    const providers = doc.oauth.providers as Record<string, unknown>[];
    providers[0]!.token_url = 'http://127.0.0.1:9/token';
    const config = parseFrontendConfig(doc);
    expect(config.oauth.providers.map((p) => [p.type, Object.keys(p.endpoints)])).toEqual([
      ['idp1', ['authorize_url', 'token_url', 'user_info_url', 'revocation_url', 'login_url']],
      ['idp2', ['authorize_url', 'token_url', 'api_base_url', 'login_url']],
      ['oidc', ['login_url']],
    ]);
    const [idp1, , oidc] = config.oauth.providers;
    expect(idp1?.type === 'idp1' && idp1.endpoints.token_url.href).toBe('http://127.0.0.1:9/token');
    expect(oidc?.type === 'oidc' && [oidc.issuer.href, oidc.endpoints.login_url.href, oidc.supportsPkce]).toEqual([
      'https://idp.example.com/',
      'https://idp.example.com/',
      true,
    ]);

    providers[0]!.api_base_url = 'https://api.example.com';
    providers[1]!.user_info_url = 'https://api.example.com/user';
    providers[2]!.token_url = 'https://idp.example.com/token';
    expect(problemsOf(doc)).toEqual([
      'oauth.providers[0].api_base_url: not used by type idp1',
      'oauth.providers[1].user_info_url: not used by type idp2',
      'oauth.providers[2].token_url: not used by type oidc: its endpoints come from issuer discovery',
    ]);
  });

  it('requires a provider for OAuth share options and knows the provider names', () => {
    const doc = valid();
    doc.shares = [
      { token: 'a1', target: 'http://x', oauth_email_address_patterns: ['*@x.io'] } as never,
      { token: 'a2', target: 'http://x', oauth_provider: 'missing' } as never,
    ];
    const problems = problemsOf(doc);
    expect(problems).toContain(
      'shares[0].oauth_provider: required when oauth_email_address_patterns or oauth_check_interval is set',
    );
    expect(problems).toContain(
      'shares[1].oauth_provider: unknown provider "missing" (configured: google, github, corp)',
    );
  });

  it('binds each share to an instance: the one named, else its token; a bad one is a problem', () => {
    const doc = valid();
    doc.shares = [
      { token: 'a1', target: 'http://x' } as never,
      { token: 'a2', instance: 'uid-2b7c', target: 'http://x' } as never,
    ];
    expect(parseFrontendConfig(doc).shares.map((s) => s.instance)).toEqual(['a1', 'uid-2b7c']);
    doc.shares = [
      { token: 'a1', instance: 'has space', target: 'http://x' } as never,
      { token: 'a2', instance: 'x'.repeat(129), target: 'http://x' } as never,
      { token: 'a3', instance: 7, target: 'http://x' } as never,
    ];
    expect(problemsOf(doc)).toEqual([
      'shares[0].instance: must be 1 to 128 printable characters without spaces',
      'shares[1].instance: must be 1 to 128 printable characters without spaces',
      'shares[2].instance: must be a string, got number 7',
    ]);
  });

  it("accepts a share pod's form: the share's own keys, the auth endpoint, no client secret, one share", () => {
    const doc = valid();
    const o = doc.oauth as Record<string, unknown>;
    o.providers = [{ name: 'corp', type: 'idp1', client_id: 'id' }];
    o.auth_service = { url: 'http://svc-auth-internal.svc-system.svc:8081', credential: 'c'.repeat(43) };
    doc.shares = [
      { token: 'abc123', instance: 'uid-1', target: 'http://127.0.0.1:3000', oauth_provider: 'corp' } as never,
    ];
    const config = parseFrontendConfig(doc);
    expect(config.oauth.authService?.url.href).toBe('http://svc-auth-internal.svc-system.svc:8081/');
    expect(config.oauth.providers[0]?.clientSecret).toBe('');
  });

  it("reports every problem of a share pod's form at once", () => {
    const doc = valid();
    const o = doc.oauth as Record<string, unknown>;
    o.auth_service = { url: 'http://auth.internal:8081/renew', credential: 'short', extra: 1 };
    o.internal_address = '0.0.0.0:8081';
    doc.shares.push({ token: 'two', target: 'http://127.0.0.1:3001' } as never);
    expect(problemsOf(doc)).toEqual([
      'oauth.auth_service.extra: unknown field (known: url, credential)',
      'oauth.auth_service.url: must be a base URL without path, query, fragment or credentials',
      'oauth.auth_service.credential: must be at least 32 characters, got 5',
      'oauth.internal_address: only the auth endpoint (installation keys) serves share pods; remove it or auth_service',
      "oauth.providers[0].client_secret: must not be set in a share pod's config (auth_service): the auth endpoint holds it",
      "oauth.providers[1].client_secret: must not be set in a share pod's config (auth_service): the auth endpoint holds it",
      "oauth.providers[2].client_secret: must not be set in a share pod's config (auth_service): the auth endpoint holds it",
      'shares: must hold exactly the one share whose keys oauth.signing_key and oauth.encryption_key are (oauth.auth_service is set), got 2',
    ]);
  });

  it('takes an internal listener for share pods only with the installation keys', () => {
    const doc = valid();
    (doc.oauth as Record<string, unknown>).internal_address = '0.0.0.0:8081';
    expect(parseFrontendConfig(doc).oauth.internalAddress).toEqual({ host: '0.0.0.0', port: 8081 });
  });
});
