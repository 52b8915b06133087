import { describe, expect, it } from 'vitest';
import { deriveToken } from '../../lib/token.ts';
import { accessEntry, shareEntry } from './kube-entries.ts';

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
