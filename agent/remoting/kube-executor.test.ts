import { describe, expect, it } from 'vitest';
import { deriveToken } from '../../lib/token.ts';
import { accessEntry, accessSpecFromArgs, shareEntry, shareSpecFromArgs } from './kube-executor.ts';

describe('shareSpecFromArgs', () => {
  it('maps the API fields onto a Share spec with the chosen token', () => {
    expect(
      shareSpecFromArgs(
        {
          shareMode: 'public',
          backendMode: 'proxy',
          target: 'http://app.team-a.svc:8080',
          oauthProvider: 'google',
          oauthEmailAddressPatterns: ['*@example.com'],
          oauthCheckInterval: '30m',
        },
        'abcdefghijkl',
      ),
    ).toEqual({
      shareMode: 'public',
      backendMode: 'proxy',
      target: 'http://app.team-a.svc:8080',
      token: 'abcdefghijkl',
      oauth: { provider: 'google', emailAddressPatterns: ['*@example.com'], checkInterval: '30m' },
    });
  });

  it('reports every problem at once, with the API field names', () => {
    expect(() =>
      shareSpecFromArgs(
        { shareMode: 'private', backendMode: 'web', target: '/srv/x', oauthCheckInterval: 'soon' },
        'abcdefghijkl',
      ),
    ).toThrow(
      /^backendMode: only proxy shares .*; target: must be an absolute http or https URL, got "\/srv\/x"; oauthProvider: required when .*; oauthProvider: OAuth applies to public shares only; oauthCheckInterval: must be a duration/,
    );
  });

  it('refuses an email pattern that does not compile', () => {
    expect(() =>
      shareSpecFromArgs(
        {
          shareMode: 'public',
          backendMode: 'proxy',
          target: 'http://x',
          oauthProvider: 'p',
          oauthEmailAddressPatterns: ['no-at-sign'],
        },
        't',
      ),
    ).toThrow(/oauthEmailAddressPatterns\[0\]/);
  });
});

describe('accessSpecFromArgs', () => {
  it('takes the port of bindAddress, 8080 by default', () => {
    expect(accessSpecFromArgs({ shareToken: 's' })).toEqual({ shareToken: 's', bindPort: 8080 });
    expect(accessSpecFromArgs({ shareToken: 's', bindAddress: '127.0.0.1:9001' })).toEqual({
      shareToken: 's',
      bindPort: 9001,
    });
    expect(() => accessSpecFromArgs({ shareToken: 's', bindAddress: 'localhost' })).toThrow(/^bindAddress:/);
  });
});

describe('status entries', () => {
  it('a Share not yet reconciled still has its token (spec, else derived from the uid)', () => {
    expect(
      shareEntry({ metadata: { name: 'a', uid: 'u-1' }, spec: { backendMode: 'proxy', target: 'http://t' } }),
    ).toEqual({
      token: deriveToken('u-1'),
      shareMode: 'public',
      backendMode: 'proxy',
      backendEndpoint: 'http://t',
      frontendEndpoints: [],
    });
  });

  it('an Access listens on its Service port', () => {
    expect(
      accessEntry({
        metadata: { name: 'x', uid: 'u-2' },
        spec: { shareToken: 'priv', bindPort: 9000 },
        status: { frontendToken: 'ftok', endpoint: 'http://svc-access-x.ns.svc:9000' },
      }),
    ).toEqual({
      token: 'ftok',
      shareToken: 'priv',
      bindAddress: '0.0.0.0:9000',
      endpoint: 'http://svc-access-x.ns.svc:9000',
    });
  });
});
