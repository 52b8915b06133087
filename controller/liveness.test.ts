import { describe, expect, it } from 'vitest';
import { SvcError } from '../lib/errors.ts';
import { StoreLiveness } from './liveness.ts';
import type { ControllerStore } from './store.ts';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('StoreLiveness', () => {
  it('is wedged only while asked calls go unanswered past the limit; any answer, a 404 too, clears it', async () => {
    let mode: 'hang' | 'unreachable' | 'answer' = 'hang';
    const fake = {
      getAccount: () =>
        mode === 'hang'
          ? new Promise(() => {})
          : mode === 'unreachable'
            ? Promise.reject(
                new SvcError('store_unavailable', 'controller store: no answer', {
                  status: 503,
                  cause: new SvcError('kube_unreachable', 'GET: no answer within 1000 ms', { status: 503 }),
                }),
              )
            : Promise.reject(new SvcError('not_found', 'no such account', { status: 404 })),
      close: () => Promise.resolve(),
    } as unknown as ControllerStore;
    const liveness = new StoreLiveness(fake, 40);
    await sleep(60);
    expect(liveness.live()).toEqual({ ok: true, detail: 'ok' }); // idle: nothing asked

    void liveness.store.getAccount('a');
    expect(liveness.live().ok).toBe(true);
    await sleep(60);
    expect(liveness.live()).toMatchObject({ ok: false });
    expect(liveness.live().detail).toMatch(/^wedged: the store answered none of 1 calls for 0 s \(1 still waiting\)$/);

    mode = 'unreachable';
    await expect(liveness.store.getAccount('b')).rejects.toThrow('no answer');
    expect(liveness.live().ok).toBe(false);

    mode = 'answer';
    await expect(liveness.store.getAccount('c')).rejects.toThrow('no such account');
    expect(liveness.live()).toEqual({ ok: true, detail: 'ok' });
  });
});
