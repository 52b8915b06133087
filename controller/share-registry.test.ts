import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/logger.ts';
import { TestClock } from '../test/support/clock.ts';
import { ControllerFileStore } from './file-store.ts';
import { newEnvironmentToken } from './tokens.ts';
import { ShareRegistry, TOKEN_QUARANTINE_MS, quarantineFor } from './share-registry.ts';
import type { EnvironmentRecord } from './store.ts';

const now = '2025-01-01T00:00:00.000Z';

const quiet = createLogger('t', { level: 'silent' });
const publicShare = (token: string) => ({ token, shareMode: 'public', backendMode: 'proxy' }) as const;

async function setUp(clock = new TestClock()) {
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
  const registry = await ShareRegistry.open(store, ['dev'], quiet, { clock });
  return {
    dir,
    store,
    registry,
    clock,
    reopen: () => ShareRegistry.open(store, ['dev'], quiet, { clock }),
    laptop: await env('laptopaaaaaa', 'alice'),
    desktop: await env('desktopccccc', 'alice'),
    other: await env('otherbbbbbbb', 'bob'),
  };
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

  it('keeps a share instance while the share is updated; a token registered again is a new instance', async () => {
    const { registry, laptop, reopen } = await setUp();
    await registry.register(laptop.record, publicShare('tok1'));
    const first = registry.lookup('tok1')?.instance;
    expect(first).toMatch(/^[\w-]{22}$/);
    await registry.register(laptop.record, { ...publicShare('tok1'), oauthProvider: 'dev' });
    expect(registry.lookup('tok1')?.instance).toBe(first);
    expect((await reopen()).lookup('tok1')?.instance).toBe(first);
    await registry.unregister(laptop.record, 'tok1');
    await registry.register(laptop.record, publicShare('tok1'));
    expect(registry.lookup('tok1')?.instance).not.toBe(first);
  });

  it('reserves a freed token to its account: another account is refused until the quarantine ends', async () => {
    const { registry, store, clock, laptop, desktop, other, reopen } = await setUp();
    await registry.register(laptop.record, publicShare('tok1'));
    await registry.unregister(laptop.record, 'tok1');
    const refused = registry.register(other.record, publicShare('tok1'));
    await expect(refused).rejects.toMatchObject({ code: 'share_token_quarantined', status: 409 });
    await expect(refused).rejects.toThrow(
      /share token tok1 was freed by another account .* until 20\d\d-.*quarantine 7d/,
    );
    // The reservation is in the store: a restarted controller refuses too.
    await expect((await reopen()).register(other.record, publicShare('tok1'))).rejects.toMatchObject({
      code: 'share_token_quarantined',
    });
    expect((await registry.sync(other.record, [publicShare('tok1')])).refused).toMatchObject([
      { token: 'tok1', code: 'share_token_quarantined' },
    ]);
    clock.advance(TOKEN_QUARANTINE_MS - 60_000);
    await expect(registry.register(other.record, publicShare('tok1'))).rejects.toMatchObject({
      code: 'share_token_quarantined',
    });
    // The account that freed it takes it back at any time, from any of its environments.
    await registry.register(desktop.record, publicShare('tok1'));
    expect(await store.listReservations()).toEqual([]);
    await registry.unregister(desktop.record, 'tok1');
    clock.advance(TOKEN_QUARANTINE_MS + 1);
    await registry.register(other.record, publicShare('tok1'));
    expect(registry.lookup('tok1')).toMatchObject({ accountId: 'bob' });
    expect(await store.listReservations()).toEqual([]);
  });

  it('reserves the tokens of a disabled environment, and forgets reservations once they end', async () => {
    const { registry, store, clock, laptop, other, reopen } = await setUp();
    await registry.register(laptop.record, publicShare('tok1'));
    await registry.register(laptop.record, publicShare('tok2'));
    await registry.removeEnvironment('laptopaaaaaa');
    await expect(registry.register(other.record, publicShare('tok2'))).rejects.toMatchObject({
      code: 'share_token_quarantined',
    });
    expect((await store.listReservations()).map((r) => [r.token, r.accountId]).sort()).toEqual([
      ['tok1', 'alice'],
      ['tok2', 'alice'],
    ]);
    clock.advance(TOKEN_QUARANTINE_MS + 1);
    await reopen();
    expect(await store.listReservations()).toEqual([]);
  });

  it('makes the quarantine of a one-process installation outlast its session lifetime', () => {
    expect(quarantineFor(undefined)).toBe(TOKEN_QUARANTINE_MS);
    expect(quarantineFor(24 * 3_600_000)).toBe(TOKEN_QUARANTINE_MS);
    expect(quarantineFor(30 * 86_400_000)).toBe(31 * 86_400_000);
  });
});
