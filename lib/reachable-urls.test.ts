import { describe, expect, it } from 'vitest';
import { agentsLine, reachableUrls, type Interfaces } from './reachable-urls.ts';

const info = (address: string, family: 'IPv4' | 'IPv6', internal = false) =>
  ({ address, family, internal, netmask: '', mac: '', cidr: null }) as unknown as NonNullable<
    Interfaces[string]
  >[number];

const machine: Interfaces = {
  lo: [info('127.0.0.1', 'IPv4', true), info('::1', 'IPv6', true)],
  eth0: [info('10.0.0.5', 'IPv4'), info('fe80::1', 'IPv6'), info('2001:db8::5', 'IPv6')],
  wlan0: [info('192.168.1.3', 'IPv4')],
};

describe('reachableUrls', () => {
  it('0.0.0.0 lists every non-loopback IPv4 address', () => {
    expect(reachableUrls({ host: '0.0.0.0', port: 18080 }, 18080, '/api/v1', machine)).toEqual([
      'http://10.0.0.5:18080/api/v1',
      'http://192.168.1.3:18080/api/v1',
    ]);
  });

  it(':: adds the global IPv6 addresses in brackets, without link-local ones', () => {
    expect(reachableUrls({ host: '::', port: 0 }, 4000, '', machine)).toEqual([
      'http://10.0.0.5:4000',
      'http://[2001:db8::5]:4000',
      'http://192.168.1.3:4000',
    ]);
  });

  it('a loopback host is reachable from no other machine; a specific address is itself', () => {
    expect(reachableUrls({ host: '127.0.0.1', port: 1 }, 1, '/x', machine)).toEqual([]);
    expect(reachableUrls({ host: '10.0.0.5', port: 1 }, 1, '/x', machine)).toEqual(['http://10.0.0.5:1/x']);
  });
});

describe('agentsLine', () => {
  it('names the URLs, or says why there is none', () => {
    expect(agentsLine({ host: '0.0.0.0', port: 0 }, 18080, '/api/v1', machine)).toContain(
      'http://10.0.0.5:18080/api/v1',
    );
    expect(agentsLine({ host: '0.0.0.0', port: 0 }, 18080, '/api/v1', { lo: machine.lo })).toContain(
      "this machine's address, port 18080",
    );
    expect(agentsLine({ host: '127.0.0.1', port: 0 }, 18080, '/api/v1', machine)).toContain('this machine only');
  });
});
