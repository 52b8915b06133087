import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/logger.ts';
import { ControllerFileStore } from './file-store.ts';
import { newEnvironmentToken } from './secrets.ts';
import { ShareRegistry } from './share-registry.ts';
import type { EnvironmentRecord } from './store.ts';

const now = '2025-01-01T00:00:00.000Z';

async function setUp() {
  const dir = mkdtempSync(join(tmpdir(), 'svc-registry-'));
  const store = new ControllerFileStore(dir);
  await store.createAccount({ id: 'alice', email: 'a@example.com', tokenHash: 'a'.repeat(64), createdAt: now });
  await store.createAccount({ id: 'bob', email: 'b@example.com', tokenHash: 'b'.repeat(64), createdAt: now });
  const env = async (envZId: string, accountId: string) => {
    const { token, hash } = newEnvironmentToken(envZId);
    const record: EnvironmentRecord = { envZId, accountId, description: '', host: '', tokenHash: hash, createdAt: now };
    await store.createEnvironment(record);
    return { record, token };
  };
  const registry = await ShareRegistry.open(store, ['dev'], createLogger('t', { level: 'silent' }));
  return { dir, store, registry, laptop: await env('laptopaaaaaa', 'alice'), other: await env('otherbbbbbbb', 'bob') };
}

describe('ShareRegistry', () => {
  it('binds a token to the environment that published it; another environment is refused', async () => {
    const { registry, laptop, other } = await setUp();
    await registry.register(laptop.record, { token: 'tok1', shareMode: 'public', backendMode: 'proxy' });
    await expect(
      registry.register(other.record, { token: 'tok1', shareMode: 'public', backendMode: 'proxy' }),
    ).rejects.toMatchObject({ code: 'share_token_taken', status: 409 });
    expect(registry.lookup('tok1')).toMatchObject({ envZId: 'laptopaaaaaa', accountId: 'alice' });
    await expect(registry.unregister(other.record, 'tok1')).rejects.toMatchObject({ code: 'unknown_share' });
  });

  it('authenticates only the exact environment token', async () => {
    const { registry, laptop } = await setUp();
    expect(await registry.authenticate(laptop.token)).toEqual({ envZId: 'laptopaaaaaa', accountId: 'alice' });
    expect(await registry.authenticate(`${laptop.token.slice(0, -1)}x`)).toBeUndefined();
    expect(await registry.authenticate('svcv_nosuchenvaaa_' + 'x'.repeat(43))).toBeUndefined();
    expect(await registry.authenticate('')).toBeUndefined();
  });

  it('sync makes the registry hold exactly the agent shares; refusals are returned; a reopened registry sees them', async () => {
    const { registry, store, laptop, other } = await setUp();
    await registry.register(laptop.record, { token: 'gone', shareMode: 'public', backendMode: 'proxy' });
    await registry.register(other.record, { token: 'theirs', shareMode: 'private', backendMode: 'web' });
    const result = await registry.sync(laptop.record, [
      {
        token: 'kept',
        shareMode: 'public',
        backendMode: 'web',
        oauthProvider: 'dev',
        oauthEmailAddressPatterns: ['*@x.com'],
      },
      { token: 'theirs', shareMode: 'public', backendMode: 'proxy' },
      { token: 'badprovider', shareMode: 'public', backendMode: 'proxy', oauthProvider: 'nope' },
    ]);
    expect(result.published).toEqual(['kept']);
    expect(result.refused.map((r) => [r.token, r.code])).toEqual([
      ['theirs', 'share_token_taken'],
      ['badprovider', 'invalid_share'],
    ]);
    expect(registry.lookup('gone')).toBeUndefined();
    const reopened = await ShareRegistry.open(store, ['dev'], createLogger('t', { level: 'silent' }));
    expect(reopened.lookup('kept')).toMatchObject({ oauth: { provider: 'dev', checkInterval: '3h' } });
    expect(reopened.lookup('theirs')?.envZId).toBe('otherbbbbbbb');
  });

  it('removing an environment drops its shares and tells the frontend to close its tunnels', async () => {
    const { registry, laptop } = await setUp();
    await registry.register(laptop.record, { token: 'tok1', shareMode: 'public', backendMode: 'proxy' });
    const revoked: string[] = [];
    registry.onRevoked((envZId) => revoked.push(envZId));
    await registry.removeEnvironment('laptopaaaaaa');
    expect(registry.lookup('tok1')).toBeUndefined();
    expect(revoked).toEqual(['laptopaaaaaa']);
  });
});
