import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTROLLER_STATE_FILE, ControllerFileStore } from './file-store.ts';
import { runStoreContract } from '../test/contracts/controller-store.ts';

runStoreContract('ControllerFileStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ctl-store-'));
  return Promise.resolve({
    store: new ControllerFileStore(dir),
    reopen: () => Promise.resolve(new ControllerFileStore(dir)),
  });
});

describe('ControllerFileStore', () => {
  it('writes an owner-only file and leaves neither temporary nor lock files behind', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'svc-ctl-store-')), 'data');
    const store = new ControllerFileStore(dir);
    await store.createAccount({ id: 'acctaaaaaaaa', email: 'a@example.com', tokenHash: 'a'.repeat(64), createdAt: '' });
    expect(statSync(join(dir, CONTROLLER_STATE_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readdirSync(dir)).toEqual([CONTROLLER_STATE_FILE]);
  });

  it('takes over a lock left by a crashed process once it is stale', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-ctl-store-'));
    const store = new ControllerFileStore(dir);
    const lock = join(dir, `${CONTROLLER_STATE_FILE}.lock`);
    writeFileSync(lock, '');
    const { utimesSync } = await import('node:fs');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    await store.createAccount({ id: 'acctbbbbbbbb', email: 'b@example.com', tokenHash: 'b'.repeat(64), createdAt: '' });
    expect(existsSync(lock)).toBe(false);
    expect((await store.getAccount('acctbbbbbbbb'))?.email).toBe('b@example.com');
  });

  it('refuses a corrupt state file with a message naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-ctl-store-'));
    writeFileSync(join(dir, CONTROLLER_STATE_FILE), '{"version": 2}');
    expect(() => new ControllerFileStore(dir)).toThrow(
      `${join(dir, CONTROLLER_STATE_FILE)} is not an svc controller state file`,
    );
  });
});
