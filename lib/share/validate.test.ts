import { describe, expect, it } from 'vitest';
import { problemText, type Problem, type Result } from '../errors.ts';
import { API_SHARE_FIELDS, CLI_SHARE_FIELDS, CONFIG_FILE_SHARE_FIELDS, CRD_SHARE_FIELDS } from './surfaces.ts';
import { EMAIL_GLOB_MAX_LENGTH, EMAIL_GLOBS_MAX } from '../glob.ts';
import { validateShareSpec, type ShareInput } from './validate.ts';

const problemsOf = (result: Result<unknown>): Problem[] => (result.ok ? [] : result.problems);
const textsOf = (result: Result<unknown>): string[] => problemsOf(result).map(problemText);

const bad: ShareInput = {
  shareMode: 'private',
  backendMode: 'ftp',
  target: 'not a url',
  oauthEmailAddressPatterns: ['[oops'],
  oauthCheckInterval: 'soon',
};

describe('validateShareSpec', () => {
  it('accepts a proxy share with OAuth, keeping what was given and what it means', () => {
    const result = validateShareSpec(
      { target: 'http://127.0.0.1:3000', oauthProvider: 'dev', oauthEmailAddressPatterns: ['*@example.com'] },
      API_SHARE_FIELDS,
      { providerNames: ['dev'] },
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value).toMatchObject({
      shareMode: 'public',
      backendMode: 'proxy',
      target: 'http://127.0.0.1:3000',
      oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'], checkIntervalMs: 3 * 3_600_000 },
      webListing: false,
    });
    expect(result.value.targetUrl?.href).toBe('http://127.0.0.1:3000/');
    expect(result.value.oauth?.checkInterval).toBeUndefined();
  });

  it('accepts a private TCP share to host:port, and refuses a public one or another target, naming the problem', () => {
    const tcp = validateShareSpec(
      { shareMode: 'private', backendMode: 'tcp', target: 'db.internal:5432' },
      API_SHARE_FIELDS,
    );
    expect(tcp).toMatchObject({ ok: true, value: { backendMode: 'tcp', target: 'db.internal:5432' } });
    expect(
      validateShareSpec({ shareMode: 'private', backendMode: 'tcp', target: '[::1]:22' }, API_SHARE_FIELDS).ok,
    ).toBe(true);
    expect(textsOf(validateShareSpec({ backendMode: 'tcp', target: '127.0.0.1:5432' }, CLI_SHARE_FIELDS))).toEqual([
      '--backend-mode: tcp applies to private shares only: a TCP share is reached through an access, never on the public frontend (got svc share public|private public)',
    ]);
    for (const target of ['http://127.0.0.1:5432', '127.0.0.1', '127.0.0.1:0', '127.0.0.1:70000', ':5432', 'a b:1']) {
      expect(
        textsOf(validateShareSpec({ shareMode: 'private', backendMode: 'tcp', target }, API_SHARE_FIELDS)),
      ).toEqual([
        `target: must be host:port for backend mode tcp (for example 127.0.0.1:5432), got ${JSON.stringify(target)}`,
      ]);
    }
  });

  it('reports every problem at once, in one order, each with a stable code', () => {
    expect(problemsOf(validateShareSpec(bad, API_SHARE_FIELDS))).toEqual([
      { path: 'backendMode', code: 'not_allowed', message: 'must be one of proxy, web, tcp, got "ftp"' },
      { path: 'target', code: 'invalid', message: 'must be an absolute URL, got "not a url"' },
      {
        path: 'oauthProvider',
        code: 'required',
        message: 'required when oauthEmailAddressPatterns or oauthCheckInterval is set',
      },
      {
        path: 'oauthProvider',
        code: 'not_allowed',
        message: 'OAuth options apply to public shares only (a private share is reached through an access)',
      },
      { path: 'oauthEmailAddressPatterns[0]', code: 'invalid', message: 'glob "[oops" has an unclosed \'[\'' },
      { path: 'oauthCheckInterval', code: 'invalid', message: 'must be a duration such as 30m or 3h, got "soon"' },
    ]);
  });

  it('gives every surface the same problems, only under its own field names', () => {
    const codes = (fields: typeof API_SHARE_FIELDS) => problemsOf(validateShareSpec(bad, fields)).map((p) => p.code);
    for (const fields of [CLI_SHARE_FIELDS, CONFIG_FILE_SHARE_FIELDS, CRD_SHARE_FIELDS]) {
      expect(codes(fields)).toEqual(codes(API_SHARE_FIELDS));
    }
    expect(textsOf(validateShareSpec(bad, CLI_SHARE_FIELDS))).toEqual([
      '--backend-mode: must be one of proxy, web, tcp, got "ftp"',
      '<target>: must be an absolute URL, got "not a url"',
      '--oauth-provider: required when --oauth-email-address-pattern or --oauth-check-interval is set',
      '--oauth-provider: OAuth options apply to public shares only (a private share is reached through an access)',
      '--oauth-email-address-pattern[0]: glob "[oops" has an unclosed \'[\'',
      '--oauth-check-interval: must be a duration such as 30m or 3h, got "soon"',
    ]);
    expect(textsOf(validateShareSpec(bad, CONFIG_FILE_SHARE_FIELDS, {}, 'shares[2]'))[2]).toBe(
      'shares[2].oauth_provider: required when oauth_email_address_patterns or oauth_check_interval is set',
    );
    expect(textsOf(validateShareSpec(bad, CRD_SHARE_FIELDS))[4]).toMatch(/^spec\.oauth\.emailAddressPatterns\[0\]: /);
  });

  it('checks the provider only where the providers are known', () => {
    const input = { target: 'http://x', oauthProvider: 'github' };
    expect(problemsOf(validateShareSpec(input, API_SHARE_FIELDS, { providerNames: ['dev', 'corp'] }))).toEqual([
      { path: 'oauthProvider', code: 'unknown_provider', message: 'unknown provider "github" (configured: dev, corp)' },
    ]);
    expect(textsOf(validateShareSpec(input, API_SHARE_FIELDS, { providerNames: [] }))).toEqual([
      'oauthProvider: unknown provider "github" (configured: none)',
    ]);
    expect(validateShareSpec(input, API_SHARE_FIELDS).ok).toBe(true);
  });

  it('refuses a backend mode the surface cannot create, and checks the target as a URL then', () => {
    const rules = { backendModes: ['proxy'] as const, unsupportedBackend: 'only proxy shares here' };
    expect(problemsOf(validateShareSpec({ backendMode: 'web', target: '/srv/x' }, API_SHARE_FIELDS, rules))).toEqual([
      { path: 'backendMode', code: 'unsupported', message: 'only proxy shares here, got "web"' },
      { path: 'target', code: 'invalid', message: 'must be an absolute URL, got "/srv/x"' },
    ]);
  });

  it("asks the surface about a web share's target, and keeps web options to web shares", () => {
    const webTarget = (t: string) =>
      t.startsWith('/srv/') ? undefined : { message: 'not served here', code: 'not_found' as const };
    expect(textsOf(validateShareSpec({ backendMode: 'web', target: '/etc' }, API_SHARE_FIELDS, { webTarget }))).toEqual(
      ['target: not served here'],
    );
    expect(
      validateShareSpec({ backendMode: 'web', target: '/srv/site', webListing: true }, API_SHARE_FIELDS, { webTarget }),
    ).toMatchObject({ ok: true, value: { backendMode: 'web', target: '/srv/site', webListing: true } });
    expect(textsOf(validateShareSpec({ target: 'http://x', webListing: 'yes' }, CLI_SHARE_FIELDS))).toEqual([
      '--web-listing: must be true or false, got string "yes"',
    ]);
    expect(textsOf(validateShareSpec({ target: 'http://x', webListing: true }, CLI_SHARE_FIELDS))).toEqual([
      '--web-listing: applies to --backend-mode web only',
    ]);
  });

  it('checks a Share object’s web volume: exactly one source for web, none for proxy', () => {
    const rules = { webVolume: true, webTarget: () => undefined };
    expect(
      textsOf(validateShareSpec({ backendMode: 'web', target: '/srv/share', webVolume: {} }, CRD_SHARE_FIELDS, rules)),
    ).toEqual(['spec.webVolume: set exactly one of configMap or persistentVolumeClaim for spec.backendMode web']);
    expect(
      textsOf(validateShareSpec({ target: 'http://x', webVolume: { configMap: 'site' } }, CRD_SHARE_FIELDS, rules)),
    ).toEqual(['spec.webVolume: only applies to spec.backendMode web']);
  });

  it('requires a token where the input names it, and holds it to a DNS label', () => {
    expect(
      textsOf(validateShareSpec({ target: 'http://x' }, CONFIG_FILE_SHARE_FIELDS, { tokenRequired: true })),
    ).toEqual(['token: required']);
    expect(problemsOf(validateShareSpec({ token: 'Not_A_Label', target: 'http://x' }, CRD_SHARE_FIELDS))).toEqual([
      {
        path: 'spec.token',
        code: 'invalid',
        message: 'must be a DNS label: lower-case letters, digits and -, at most 63 characters',
      },
    ]);
  });

  it('compiles every glob a user can type, and bounds their number and length, on every surface', () => {
    const typed = ['*@my-company.com', 'a+b@x.io', '(a|b)@x.io', '$^{}/@x.io', 'é😀@x.io', '[a-z-]@x.io'];
    for (const fields of [API_SHARE_FIELDS, CLI_SHARE_FIELDS, CONFIG_FILE_SHARE_FIELDS, CRD_SHARE_FIELDS]) {
      const ok = validateShareSpec(
        { target: 'http://x', oauthProvider: 'p', oauthEmailAddressPatterns: typed },
        fields,
      );
      expect(ok.ok && ok.value.oauth?.emailPatterns.map((g) => g.matches('alice@my-company.com'))).toEqual([
        true, false, false, false, false, false,
      ]); // prettier-ignore
    }
    const tooLong = `${'a'.repeat(EMAIL_GLOB_MAX_LENGTH - 5)}😀@x.io`;
    const input = {
      target: 'http://x',
      oauthProvider: 'p',
      oauthEmailAddressPatterns: [tooLong.slice(2), tooLong, ...Array<string>(EMAIL_GLOBS_MAX - 1).fill('*@x.io')],
    };
    expect(problemsOf(validateShareSpec(input, API_SHARE_FIELDS))).toEqual([
      { path: 'oauthEmailAddressPatterns', code: 'not_allowed', message: 'at most 64 patterns, got 65' },
      { path: 'oauthEmailAddressPatterns[1]', code: 'not_allowed', message: 'at most 320 characters, got 321' },
    ]);
    expect(textsOf(validateShareSpec(input, CLI_SHARE_FIELDS))).toEqual([
      '--oauth-email-address-pattern: at most 64 patterns, got 65',
      '--oauth-email-address-pattern[1]: at most 320 characters, got 321',
    ]);
    expect(textsOf(validateShareSpec(input, CONFIG_FILE_SHARE_FIELDS, {}, 'shares[0]'))).toEqual([
      'shares[0].oauth_email_address_patterns: at most 64 patterns, got 65',
      'shares[0].oauth_email_address_patterns[1]: at most 320 characters, got 321',
    ]);
    expect(textsOf(validateShareSpec(input, CRD_SHARE_FIELDS))).toEqual([
      'spec.oauth.emailAddressPatterns: at most 64 patterns, got 65',
      'spec.oauth.emailAddressPatterns[1]: at most 320 characters, got 321',
    ]);
  });

  it('names wrong types instead of guessing', () => {
    expect(
      textsOf(
        validateShareSpec(
          { shareMode: 1, target: 5, oauthProvider: 'p', oauthEmailAddressPatterns: 'a@b', oauthCheckInterval: 30 },
          API_SHARE_FIELDS,
        ),
      ),
    ).toEqual([
      'shareMode: must be one of public, private, got 1',
      'target: must be a string, got number 5',
      'oauthEmailAddressPatterns: must be a list of non-empty strings',
      'oauthCheckInterval: must be a string, got number 30',
    ]);
    // A token is a secret's name: its value is never quoted, under any surface's path.
    for (const [fields, under, path] of [
      [CONFIG_FILE_SHARE_FIELDS, 'shares[3]', 'shares[3].token'],
      [CLI_SHARE_FIELDS, '', '<token>'],
      [CRD_SHARE_FIELDS, '', 'spec.token'],
    ] as const) {
      expect(textsOf(validateShareSpec({ token: 123456, target: 'http://x' }, fields, {}, under))).toEqual([
        `${path}: must be a string, got a number`,
      ]);
    }
  });
});
