import { describe, expect, it } from 'vitest';
import { ConfigError, problemText } from '../lib/errors.ts';
import { parseServeConfig } from './config.ts';
import { shareUrl } from '../lib/tunnel/protocol.ts';

const oauth = {
  bind_address: '127.0.0.1:8443',
  endpoint_url: 'https://auth.share.example.com',
  cookie_name: 'svc-auth-session',
  cookie_domain: 'share.example.com',
  session_lifetime: '24h',
  intermediate_lifetime: '5m',
  signing_key: 's'.repeat(32),
  encryption_key: 'e'.repeat(24),
  providers: [
    {
      name: 'corp',
      type: 'oidc',
      client_id: 'c',
      client_secret: 'x',
      scopes: ['openid', 'email'],
      issuer: 'https://id.example.com',
      supports_pkce: true,
    },
  ],
};

describe('parseServeConfig', () => {
  it('defaults to 127.0.0.1:8080 and svc.localhost without OAuth', () => {
    expect(parseServeConfig({})).toEqual({
      frontend: { listen: { host: '127.0.0.1', port: 8080 }, domain: 'svc.localhost' },
      ui: {
        enabled: true,
        listen: { host: '127.0.0.1', port: 4040 },
        defaultListen: true,
        inspector: { requests: 100, bodyBytes: 16384, memoryBytes: 8388608 },
      },
    });
  });

  it('reads the ui section: a loopback page, the inspector bounds or the inspector off', () => {
    const ui = { listen: '127.0.0.1:0', inspector: { requests: 5, body_bytes: 1024, memory_bytes: 65536 } };
    expect(parseServeConfig({ ui }).ui).toEqual({
      enabled: true,
      listen: { host: '127.0.0.1', port: 0 },
      defaultListen: false,
      inspector: { requests: 5, bodyBytes: 1024, memoryBytes: 65536 },
    });
    expect(parseServeConfig({ ui: { inspector: { enabled: false } } }).ui.inspector).toBeUndefined();
    expect(parseServeConfig({ ui: { enabled: false } }).ui.enabled).toBe(false);
    let error: unknown;
    try {
      parseServeConfig({ ui: { listen: '0.0.0.0:4040', inspector: { requests: 0, body_bytes: 'big', colour: 1 } } });
    } catch (err) {
      error = err;
    }
    expect((error as ConfigError).problems.map(problemText)).toEqual([
      'ui.listen: must be a loopback address (127.0.0.1 or ::1): the page controls this machine\'s shares, got "0.0.0.0"',
      'ui.inspector.colour: unknown field (known: enabled, requests, body_bytes, memory_bytes)',
      'ui.inspector.requests: must be a whole number from 1 to 10000, got 0',
      'ui.inspector.body_bytes: must be a whole number from 1 to 16777216, got "big"',
    ]);
  });

  it('takes the frontend address, domain and URL from the oauth section', () => {
    const config = parseServeConfig({ data_dir: '/var/lib/svc', oauth });
    expect(config.dataDir).toBe('/var/lib/svc');
    expect(config.frontend.listen).toEqual({ host: '127.0.0.1', port: 8443 });
    expect(config.frontend.domain).toBe('share.example.com');
    expect(config.frontend.endpointUrl?.href).toBe('https://auth.share.example.com/');
    expect(config.oauth?.providers.map((p) => p.name)).toEqual(['corp']);
  });

  it('reports every problem at once with its field path', () => {
    let error: unknown;
    try {
      parseServeConfig({
        datadir: 'x',
        frontend: { listen: 'nowhere', domain: 'Bad_Domain!', endpoint_url: 'ftp://x', colour: 1 },
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map(problemText)).toEqual([
      'datadir: unknown field (known: data_dir, frontend, oauth, controller, agent_controller, tunnel, console, ui)',
      'frontend.colour: unknown field (known: listen, domain, endpoint_url, metrics_listen)',
      'frontend.listen: must be ip:port (for example 0.0.0.0:8080), got "nowhere"',
      'frontend.domain: must be a DNS domain such as share.example.com, got "bad_domain!"',
      'frontend.endpoint_url: must be an http or https URL, got "ftp://x"',
    ]);
  });

  it('merges --listen into the file before validating: file and flag problems come out together', () => {
    expect(parseServeConfig({}, { listen: '[::1]:0' }).frontend.listen).toEqual({ host: '::1', port: 0 });
    expect(parseServeConfig({ oauth }, { listen: '0.0.0.0:9443' }).oauth?.bindAddress).toEqual({
      host: '0.0.0.0',
      port: 9443,
    });
    let error: unknown;
    try {
      parseServeConfig(
        { frontend: { listen: '127.0.0.1:1', domain: 'Bad_Domain!' }, oauth },
        { listen: 'bad', dev: true },
      );
    } catch (err) {
      error = err;
    }
    expect((error as ConfigError).problems.map(problemText)).toEqual([
      '--dev: brings its own oauth section: remove oauth from the config file or drop --dev',
      '--listen: must be ip:port (for example 0.0.0.0:8080), got "bad"',
      'frontend.listen: comes from oauth.bind_address when an oauth section is present; remove it',
      'frontend.domain: comes from oauth.cookie_domain when an oauth section is present; remove it',
    ]);
    expect((error as ConfigError).message).toMatch(/^invalid configuration in the svc serve flags:/);
  });

  it('refuses frontend settings that the oauth section decides', () => {
    expect(() =>
      parseServeConfig({ oauth: { ...oauth, signing_key: 'short' }, frontend: { listen: '0.0.0.0:80' } }),
    ).toThrow(
      /oauth\.signing_key: must be at least 32 characters[\s\S]*frontend\.listen: comes from oauth\.bind_address/,
    );
  });
});

describe('shareUrl', () => {
  it('names the token as the first label and omits default ports', () => {
    expect(shareUrl('abc', 'svc.localhost', { protocol: 'http:', port: 8080 })).toBe('http://abc.svc.localhost:8080');
    expect(shareUrl('abc', 'share.example.com', { protocol: 'https:', port: '' })).toBe(
      'https://abc.share.example.com',
    );
    expect(shareUrl('abc', 'share.example.com', { protocol: 'https:', port: 443 })).toBe(
      'https://abc.share.example.com',
    );
  });
});
