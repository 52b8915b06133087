import { describe, expect, it } from 'vitest';
import { accessSpecFromArgs, shareSpecFromArgs } from './kube-specs.ts';

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
      /^invalid share:\n {2}- backendMode: only proxy shares .*\n {2}- target: must be an absolute URL, got "\/srv\/x"\n {2}- oauthProvider: required when .*\n {2}- oauthProvider: OAuth options apply to public shares only.*\n {2}- oauthCheckInterval: must be a duration/,
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
    expect(() => accessSpecFromArgs({ shareToken: 's', bindAddress: 'localhost' })).toThrow(
      /^invalid access:\n {2}- bindAddress: must be ip:port/,
    );
  });
});
