import { describe, expect, it } from 'vitest';
import { reservedTokens } from '../lib/share/reserved-tokens.ts';
import { applyQuota } from './auth-quota.ts';
import { AUTH_SHARDS, entryBytes, renderShards, shardKey, shardOf } from './auth-shards.ts';
import type { ValidShare } from './share-children.ts';

const share = (namespace: string, name: string, patterns = 1): ValidShare => ({
  name,
  namespace,
  token: `${namespace}-${name}`,
  instance: `${namespace}-${name}`,
  shareMode: 'public',
  backendMode: 'proxy',
  target: 'http://app:80',
  oauth: {
    provider: 'dev',
    emailAddressPatterns: Array.from({ length: patterns }, (_, i) => `*${i}${'x'.repeat(280)}@example.com`),
    checkInterval: '30m',
  },
});

describe('the auth share quota', () => {
  it('counts each namespace’s shares oldest first and leaves out only its own past the quota', () => {
    const shares = [share('a', 'a1', 10), share('b', 'b1', 10), share('a', 'a2', 10), share('a', 'a3', 1)];
    const big = entryBytes(shares[0] as ValidShare);
    const { admitted, over } = applyQuota(shares, big + 1000);
    // a2 would pass a's quota; the smaller, newer a3 still fits; b is untouched.
    expect(admitted.map((s) => s.name)).toEqual(['a1', 'b1', 'a3']);
    expect([...over.keys()]).toEqual(['a/a2']);
    expect(over.get('a/a2')).toMatchObject({ namespace: 'a', used: big, quota: big + 1000 });
  });
});

describe('a full shard', () => {
  it('drops the newest shares of the namespace using the most, never one of a namespace using less', () => {
    const key = shardKey('k'.repeat(32));
    const inShard0 = (namespace: string, count: number, patterns: number): ValidShare[] => {
      const found: ValidShare[] = [];
      for (let i = 0; found.length < count; i++)
        if (shardOf(namespace, `s${i}`, key) === 0) found.push(share(namespace, `s${i}`, patterns));
      return found;
    };
    // Oldest first: the small namespace's share comes last, the big namespace's first.
    const heavy = inShard0('heavy', 8, 20);
    const light = inShard0('light', 1, 20);
    const limit = entryBytes(heavy[0] as ValidShare) * 6;
    const shards = renderShards([...heavy, ...light], key, limit);
    expect(shards).toHaveLength(AUTH_SHARDS);
    const dropped = shards[0]?.dropped.map((s) => `${s.namespace}/${s.name}`) ?? [];
    expect(dropped.every((k) => k.startsWith('heavy/'))).toBe(true);
    // The newest of heavy's go first.
    expect(dropped).toEqual(
      heavy
        .slice(heavy.length - dropped.length)
        .map((s) => `heavy/${s.name}`)
        .reverse(),
    );
    expect(shards[0]?.text).toContain('"light-');
  });

  it('is picked by a key: another signing key puts the same names in other shards', () => {
    const names = Array.from({ length: 64 }, (_, i) => `app-${i}`);
    const one = names.map((n) => shardOf('team', n, shardKey('a'.repeat(32))));
    const two = names.map((n) => shardOf('team', n, shardKey('b'.repeat(32))));
    expect(one).not.toEqual(two);
  });
});

describe('reserved tokens', () => {
  it('are the first labels of hosts directly under the share domain', () => {
    const reserved = reservedTokens(
      [
        'auth.share.example.com',
        'share.example.com',
        'a.b.share.example.com',
        'api.example.com',
        'API.Share.Example.com.',
        undefined,
      ],
      'share.example.com',
    );
    expect([...reserved]).toEqual([
      ['auth', 'auth.share.example.com'],
      ['api', 'api.share.example.com'],
    ]);
  });
});
