import { describe, expect, it } from 'vitest';
import { formatAddress, listenAddressProblem, parseListenAddress } from './listen.ts';

describe('parseListenAddress', () => {
  it('reads ip:port, [ipv6]:port and :port (every interface)', () => {
    expect(parseListenAddress('127.0.0.1:8080')).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(parseListenAddress('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(parseListenAddress(':0')).toEqual({ host: '0.0.0.0', port: 0 });
    expect(parseListenAddress('localhost:65535')).toEqual({ host: 'localhost', port: 65535 });
  });

  it('refuses text without a port, with a port above 65535, or an unbracketed IPv6 host', () => {
    for (const text of ['localhost', '127.0.0.1', '127.0.0.1:65536', '::1:80', '127.0.0.1:http', '']) {
      expect(parseListenAddress(text), text).toBeUndefined();
    }
  });

  it('words every refusal the same way, quoting the text', () => {
    expect(listenAddressProblem('here')).toBe('must be ip:port (for example 0.0.0.0:8080), got "here"');
  });

  it('reads back what formatAddress writes, IPv6 hosts bracketed', () => {
    expect(formatAddress({ host: '0.0.0.0', port: 80 })).toBe('0.0.0.0:80');
    expect(formatAddress({ host: '::1', port: 80 })).toBe('[::1]:80');
    expect(parseListenAddress(formatAddress({ host: '::', port: 1 }))).toEqual({ host: '::', port: 1 });
  });
});
