import { describe, expect, it } from 'vitest';
import { upstreamHost, upstreamPort } from './http-pipe.ts';

describe('upstreamHost and upstreamPort', () => {
  it("give the target's socket address, with the scheme's default port when the URL has none", () => {
    expect([upstreamHost(new URL('http://app.internal')), upstreamPort(new URL('http://app.internal'))]).toEqual([
      'app.internal',
      80,
    ]);
    expect(upstreamPort(new URL('https://app.internal/base/'))).toBe(443);
    expect(upstreamPort(new URL('https://app.internal:8443'))).toBe(8443);
    expect(upstreamPort(new URL('http://app.internal:443'))).toBe(443);
    expect(upstreamHost(new URL('https://[::1]:9443'))).toBe('::1');
  });
});
