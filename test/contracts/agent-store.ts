import { describe, expect, it } from 'vitest';
import type { AccessRecord, AgentStore, ShareRecord } from '../../agent/store.ts';

/**
 * Specs every AgentStore implementation must pass (the file store now, a Kubernetes-backed store
 * later): run `storeContract('name', factory)` from that implementation's test. `reopen` builds a
 * second store over the same backing state, to check durability.
 */
export function storeContract(
  name: string,
  open: () => Promise<{ store: AgentStore; reopen: () => Promise<AgentStore> }>,
): void {
  const share = (token: string, extra: Partial<ShareRecord> = {}): ShareRecord => ({
    token,
    shareMode: 'public',
    backendMode: 'proxy',
    target: 'http://127.0.0.1:3000/',
    createdAt: '2025-01-01T00:00:00.000Z',
    ...extra,
  });
  const access = (token: string, shareToken: string): AccessRecord => ({
    token,
    shareToken,
    bindAddress: '127.0.0.1:9191',
    createdAt: '2025-01-01T00:00:00.000Z',
  });

  describe(`AgentStore contract: ${name}`, () => {
    it('starts empty', async () => {
      const { store } = await open();
      expect(await store.listShares()).toEqual([]);
      expect(await store.listAccesses()).toEqual([]);
    });

    it('creates, reads and lists shares with every field', async () => {
      const { store } = await open();
      const oauthShare = share('aaaaaaaaaaaa', {
        oauth: { provider: 'dev', emailAddressPatterns: ['*@example.com'], checkInterval: '30m' },
      });
      const webShare = share('bbbbbbbbbbbb', {
        shareMode: 'private',
        backendMode: 'web',
        target: '/srv/www',
        webListing: true,
      });
      await store.createShare(oauthShare);
      await store.createShare(webShare);
      expect(await store.getShare('aaaaaaaaaaaa')).toEqual(oauthShare);
      expect(await store.getShare('missing')).toBeUndefined();
      expect((await store.listShares()).map((s) => s.token).sort()).toEqual(['aaaaaaaaaaaa', 'bbbbbbbbbbbb']);
    });

    it('refuses a duplicate token and keeps the first share', async () => {
      const { store } = await open();
      await store.createShare(share('cccccccccccc'));
      await expect(store.createShare(share('cccccccccccc', { target: 'http://other/' }))).rejects.toMatchObject({
        code: 'conflict',
      });
      expect((await store.getShare('cccccccccccc'))?.target).toBe('http://127.0.0.1:3000/');
    });

    it('deletes a share together with its accesses', async () => {
      const { store } = await open();
      await store.createShare(share('dddddddddddd', { shareMode: 'private' }));
      await store.createShare(share('eeeeeeeeeeee', { shareMode: 'private' }));
      await store.createAccess(access('acc1', 'dddddddddddd'));
      await store.createAccess(access('acc2', 'eeeeeeeeeeee'));
      expect(await store.deleteShare('dddddddddddd')).toBe(true);
      expect(await store.deleteShare('dddddddddddd')).toBe(false);
      expect((await store.listAccesses()).map((a) => a.token)).toEqual(['acc2']);
    });

    it('refuses an access to an unknown share, and deletes accesses', async () => {
      const { store } = await open();
      await expect(store.createAccess(access('acc3', 'nosuchshare1'))).rejects.toMatchObject({ code: 'not_found' });
      await store.createShare(share('ffffffffffff', { shareMode: 'private' }));
      await store.createAccess(access('acc4', 'ffffffffffff'));
      expect(await store.deleteAccess('acc4')).toBe(true);
      expect(await store.deleteAccess('acc4')).toBe(false);
      expect(await store.listAccesses()).toEqual([]);
    });

    it('keeps a remote access (its share is on another machine of the account) across a reopen', async () => {
      const { store, reopen } = await open();
      const remote: AccessRecord = { ...access('acc6', 'elsewhere123'), remote: true };
      await store.createAccess(remote);
      expect(await (await reopen()).listAccesses()).toEqual([remote]);
    });

    it('keeps everything across a reopen', async () => {
      const { store, reopen } = await open();
      await store.createShare(share('gggggggggggg', { shareMode: 'private' }));
      await store.createAccess(access('acc5', 'gggggggggggg'));
      const again = await reopen();
      expect(await again.listShares()).toEqual(await store.listShares());
      expect(await again.listAccesses()).toEqual([access('acc5', 'gggggggggggg')]);
    });
  });
}
