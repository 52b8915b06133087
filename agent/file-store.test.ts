import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storeContract } from '../test/contracts/agent-store.ts';
import { FileStore, STORE_FILE } from './file-store.ts';

storeContract('FileStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
  return Promise.resolve({ store: new FileStore(dir), reopen: () => Promise.resolve(new FileStore(dir)) });
});

describe('FileStore', () => {
  it('writes an owner-only file and leaves no temporary files behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    const store = new FileStore(join(dir, 'data'));
    await store.createShare({
      token: 'hhhhhhhhhhhh',
      shareMode: 'public',
      backendMode: 'proxy',
      target: 'http://127.0.0.1:1/',
      createdAt: new Date().toISOString(),
    });
    expect(statSync(join(dir, 'data', STORE_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'data')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(dir, 'data'))).toEqual([STORE_FILE]);
  });

  it('refuses a corrupt state file with a message naming it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    writeFileSync(join(dir, STORE_FILE), '{not json');
    expect(() => new FileStore(dir)).toThrow(`${join(dir, STORE_FILE)} is not valid JSON`);
  });
});
