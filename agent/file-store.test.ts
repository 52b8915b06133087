import { mkdirSync, mkdtempSync, readdirSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storeContract } from '../test/contracts/agent-store.ts';
import { writeFileAtomicAsync } from '../lib/atomic-file.ts';
import type { ShareRecord } from './store.ts';
import { FileStore, STORE_FILE, type StateWriter } from './file-store.ts';

storeContract('FileStore', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
  return Promise.resolve({ store: new FileStore(dir), reopen: () => Promise.resolve(new FileStore(dir)) });
});

const share = (token: string): ShareRecord => ({
  token,
  shareMode: 'private',
  backendMode: 'proxy',
  target: 'http://127.0.0.1:1/',
  createdAt: '2025-01-01T00:00:00.000Z',
});

/** The real writer, counting its writes; `failNext` makes the next write throw once its gate opens. */
function countingWriter() {
  const w = {
    writes: 0,
    failNext: undefined as { gate: Promise<void> } | undefined,
    write: (async (path, text) => {
      w.writes++;
      const fail = w.failNext;
      w.failNext = undefined;
      if (fail) {
        await fail.gate;
        throw new Error('disk full');
      }
      await writeFileAtomicAsync(path, text);
    }) as StateWriter,
  };
  return w;
}

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

  it('carries concurrent changes in fewer writes, each resolved only once it is on disk', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    const writer = countingWriter();
    const store = new FileStore(dir, { write: writer.write });
    const tokens = Array.from({ length: 50 }, (_, i) => `group${String(i).padStart(7, '0')}`);
    await Promise.all(tokens.map((t) => store.createShare(share(t))));
    expect(writer.writes).toBeGreaterThan(0);
    expect(writer.writes).toBeLessThan(50);
    const reread = await new FileStore(dir).listShares();
    expect(reread.map((s) => s.token).sort()).toEqual(tokens);
  });

  it('lets exactly one of concurrent creates of the same token succeed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    const store = new FileStore(dir);
    const targets = ['http://127.0.0.1:1/', 'http://127.0.0.1:2/', 'http://127.0.0.1:3/', 'http://127.0.0.1:4/'];
    const results = await Promise.allSettled(
      targets.map((target) => store.createShare({ ...share('samesame1234'), target })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of results.filter((r) => r.status === 'rejected'))
      expect(r.reason).toMatchObject({ code: 'conflict' });
    const winner = targets[results.findIndex((r) => r.status === 'fulfilled')];
    expect(await new FileStore(dir).listShares()).toEqual([{ ...share('samesame1234'), target: winner }]);
  });

  it('on a failed write rejects the changes it carried, drops them, and re-checks the ones that waited', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    const writer = countingWriter();
    const store = new FileStore(dir, { write: writer.write });
    await store.createShare(share('kept00000001'));
    let open!: () => void;
    writer.failNext = { gate: new Promise<void>((r) => (open = r)) };
    const failing = [store.createShare(share('lost00000001')), store.createShare(share('lost00000002'))];
    // Wait until that write is in flight, then queue changes behind it: one depends on a share being lost.
    while (writer.writes < 2) await new Promise((r) => setImmediate(r));
    const later = store.createShare(share('later0000001'));
    const dependent = store.createAccess({
      token: 'acc-on-lost1',
      shareToken: 'lost00000001',
      bindAddress: '127.0.0.1:9191',
      createdAt: '2025-01-01T00:00:00.000Z',
    });
    const deleteLost = store.deleteShare('lost00000002');
    open();
    for (const p of failing) await expect(p).rejects.toMatchObject({ code: 'store_write_failed' });
    await expect(dependent).rejects.toMatchObject({ code: 'not_found' });
    await expect(deleteLost).resolves.toBe(false);
    await expect(later).resolves.toBeUndefined();
    const expected = ['kept00000001', 'later0000001'];
    expect((await store.listShares()).map((s) => s.token)).toEqual(expected);
    expect(await store.listAccesses()).toEqual([]);
    const reread = new FileStore(dir);
    expect((await reread.listShares()).map((s) => s.token)).toEqual(expected);
    expect(await reread.listAccesses()).toEqual([]);
  });

  it('rejects a change whose real write fails, leaves no temporary file, and writes the next change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-store-'));
    const store = new FileStore(dir);
    // A non-empty folder where the state file goes: the rename over it fails, for root too.
    mkdirSync(join(dir, STORE_FILE, 'blocker'), { recursive: true });
    await expect(store.createShare(share('blocked00001'))).rejects.toMatchObject({ code: 'store_write_failed' });
    expect(await store.listShares()).toEqual([]);
    expect(readdirSync(dir)).toEqual([STORE_FILE]);
    rmdirSync(join(dir, STORE_FILE, 'blocker'));
    rmdirSync(join(dir, STORE_FILE));
    await store.createShare(share('after0000001'));
    expect((await new FileStore(dir).listShares()).map((s) => s.token)).toEqual(['after0000001']);
  });
});
