import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { shareUrl } from './redirects.ts';

describe('post-login target', () => {
  const endpoint = new URL('https://www.whitelisteddomain.tld');
  const corpus = readFileSync(new URL('../test/data/openredirects.txt', import.meta.url), 'utf8')
    .split('\n')
    .filter(Boolean);

  it('always stays on the share host, whatever path the visitor started from', () => {
    for (const payload of corpus) {
      const url = shareUrl('abc', 'whitelisteddomain.tld', endpoint, payload);
      expect(url.host, payload).toBe('abc.whitelisteddomain.tld');
      expect(url.protocol).toBe('https:');
    }
  });

  it('keeps an ordinary path and query', () => {
    expect(shareUrl('abc', 'example.com', new URL('http://auth.example.com:8080'), '/a/b?c=d').href).toBe(
      'http://abc.example.com:8080/a/b?c=d',
    );
  });
});
