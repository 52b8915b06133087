import { describe, expect, it } from 'vitest';
import { connectionListed, forwardedConnection, withoutListed } from './hop-by-hop.ts';

describe('connectionListed', () => {
  it('is empty for the common values and for the fixed hop-by-hop names', () => {
    for (const value of [undefined, 'keep-alive', 'close', 'Upgrade', 'Keep-Alive', 'keep-alive, Upgrade', ' , ']) {
      expect(connectionListed(value)).toEqual([]);
    }
  });

  it('lists the other names, lower-case, from one or several Connection headers', () => {
    expect(connectionListed('keep-alive, X-Secret ,x-other')).toEqual(['x-secret', 'x-other']);
    expect(connectionListed(['close', 'X-A'])).toEqual(['x-a']);
  });

  it('never lists the framing headers or Host, which each hop owns', () => {
    expect(connectionListed('Content-Length, Transfer-Encoding, Host, x-a')).toEqual(['x-a']);
  });
});

describe('forwardedConnection', () => {
  it('keeps only the connection options', () => {
    expect(forwardedConnection('Upgrade')).toBe('Upgrade');
    expect(forwardedConnection('svc-auth-email, Upgrade, x-forwarded-for')).toBe('Upgrade');
    expect(forwardedConnection('x-a')).toBeUndefined();
  });
});

describe('withoutListed', () => {
  it('removes the named headers from a flat list, in any case', () => {
    const headers = ['X-Secret', '1', 'content-type', 'text/plain', 'x-secret', '2', 'X-Other', '3'];
    withoutListed(headers, ['x-secret']);
    expect(headers).toEqual(['content-type', 'text/plain', 'X-Other', '3']);
  });
});
