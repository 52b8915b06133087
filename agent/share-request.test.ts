import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { API_SHARE_FIELDS } from '../lib/share/surfaces.ts';
import { validateShareRequest } from './share-request.ts';
import { newToken } from '../lib/token.ts';

const token = 'tttttttttttt';

describe('validateShareRequest', () => {
  it('accepts a proxy share with OAuth options and fills the default check interval', () => {
    const record = validateShareRequest(
      { target: 'http://127.0.0.1:3000', oauthProvider: 'dev', oauthEmailAddressPatterns: ['*@example.com'] },
      token,
      ['dev'],
      API_SHARE_FIELDS,
    );
    expect(record).toMatchObject({
      token,
      shareMode: 'public',
      backendMode: 'proxy',
      target: 'http://127.0.0.1:3000/',
      oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'], checkInterval: '3h' },
    });
  });

  it('accepts a web share of an existing absolute folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-share-'));
    expect(validateShareRequest({ backendMode: 'web', target: dir }, token, [], API_SHARE_FIELDS)).toMatchObject({
      backendMode: 'web',
      target: dir,
    });
  });

  it('reports every bad field at once', () => {
    expect(() =>
      validateShareRequest(
        {
          shareMode: 'secret',
          backendMode: 'ftp',
          target: 'not a url',
          oauthProvider: 'github',
          oauthEmailAddressPatterns: ['[oops'],
          oauthCheckInterval: 'soon',
        },
        token,
        ['dev'],
        API_SHARE_FIELDS,
      ),
    ).toThrow(
      [
        'invalid share:',
        '  - shareMode: must be one of public, private, got "secret"',
        '  - backendMode: must be one of proxy, web, tcp, got "ftp"',
        '  - target: must be an absolute URL, got "not a url"',
        '  - oauthProvider: unknown provider "github" (configured: dev)',
        '  - oauthEmailAddressPatterns[0]: glob "[oops" has an unclosed \'[\'',
        '  - oauthCheckInterval: must be a duration such as 30m or 3h, got "soon"',
      ].join('\n'),
    );
  });

  it('refuses a missing folder, a relative folder, OAuth on a private share, and any provider when none is configured', () => {
    expect(() =>
      validateShareRequest({ backendMode: 'web', target: '/no/such/folder' }, token, [], API_SHARE_FIELDS),
    ).toThrow('target: folder /no/such/folder does not exist');
    expect(() => validateShareRequest({ backendMode: 'web', target: 'site' }, token, [], API_SHARE_FIELDS)).toThrow(
      'must be an absolute folder path',
    );
    expect(() =>
      validateShareRequest(
        { shareMode: 'private', target: 'http://x', oauthProvider: 'dev' },
        token,
        ['dev'],
        API_SHARE_FIELDS,
      ),
    ).toThrow('OAuth options apply to public shares only');
    expect(() =>
      validateShareRequest({ target: 'http://x', oauthProvider: 'dev' }, token, [], API_SHARE_FIELDS),
    ).toThrow('oauthProvider: unknown provider "dev" (configured: none)');
  });
});

describe('newToken', () => {
  it('makes distinct DNS-label tokens of 12 characters from a 32-character alphabet', () => {
    const tokens = new Set(Array.from({ length: 2000 }, () => newToken()));
    expect(tokens.size).toBe(2000);
    for (const t of tokens) expect(t).toMatch(/^[a-z2-7]{12}$/);
  });
});
