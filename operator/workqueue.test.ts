import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.ts';
import { WorkQueue } from './workqueue.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not reached');
    await sleep(2);
  }
}

describe('backoffDelay', () => {
  const policy = { baseMs: 100, maxMs: 1000 };
  it('doubles per failure and stays within [50%, 100%] of the ceiling', () => {
    expect(backoffDelay(policy, 1, () => 1)).toBe(100);
    expect(backoffDelay(policy, 2, () => 1)).toBe(200);
    expect(backoffDelay(policy, 3, () => 0)).toBe(200);
    expect(backoffDelay(policy, 4, () => 0.5)).toBe(600);
  });
  it('is capped', () => {
    expect(backoffDelay(policy, 50, () => 1)).toBe(1000);
    expect(backoffDelay(policy, 5000, () => 1)).toBe(1000);
  });
});

describe('WorkQueue', () => {
  it('does nothing while paused and runs queued keys on resume', async () => {
    const seen: string[] = [];
    const q = new WorkQueue({
      concurrency: 1,
      backoff: { baseMs: 10, maxMs: 10 },
      handler: (k) => Promise.resolve(void seen.push(k)),
    });
    q.add('a');
    q.add('b');
    await sleep(10);
    expect(seen).toEqual([]);
    expect(q.depth).toBe(2);
    q.resume();
    await until(() => seen.length === 2);
    expect(seen).toEqual(['a', 'b']);
    await q.close();
  });

  it('deduplicates a key queued several times before it runs', async () => {
    const seen: string[] = [];
    const q = new WorkQueue({
      concurrency: 1,
      backoff: { baseMs: 10, maxMs: 10 },
      handler: (k) => Promise.resolve(void seen.push(k)),
    });
    q.add('a');
    q.add('a');
    q.add('a');
    q.resume();
    await until(() => seen.length >= 1);
    await sleep(20);
    expect(seen).toEqual(['a']);
    await q.close();
  });

  it('re-runs a key added while in flight exactly once afterwards, never concurrently', async () => {
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const q = new WorkQueue({
      concurrency: 4,
      backoff: { baseMs: 10, maxMs: 10 },
      handler: async () => {
        runs++;
        running++;
        maxRunning = Math.max(maxRunning, running);
        if (runs === 1) await gate.promise;
        running--;
      },
    });
    q.resume();
    q.add('a');
    await until(() => runs === 1);
    q.add('a');
    q.add('a');
    q.add('a');
    gate.resolve();
    await until(() => runs === 2);
    await sleep(20);
    expect(runs).toBe(2);
    expect(maxRunning).toBe(1);
    await q.close();
  });

  it('retries failures with growing backoff and resets it after a success', async () => {
    const times: number[] = [];
    let failUntil = 3;
    const retries: number[] = [];
    const q = new WorkQueue({
      concurrency: 1,
      backoff: { baseMs: 20, maxMs: 1000 },
      random: () => 1,
      onRetry: (_k, _e, failures, delay) => retries.push(failures * 10000 + delay),
      handler: () => {
        times.push(Date.now());
        return times.length <= failUntil ? Promise.reject(new Error('boom')) : Promise.resolve();
      },
    });
    q.resume();
    q.add('a');
    await until(() => times.length === 4);
    expect(retries).toEqual([10020, 20040, 30080]);
    expect(q.failuresOf('a')).toBe(0);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    expect(gaps[0]).toBeGreaterThanOrEqual(15);
    expect(gaps[2]).toBeGreaterThanOrEqual(70);
    failUntil = 5;
    q.add('a');
    await until(() => times.length === 5);
    expect(retries.at(-1)).toBe(10020);
    await q.close();
  });

  it('keeps backoff per key: a failing key does not slow another', async () => {
    const seen: string[] = [];
    const q = new WorkQueue({
      concurrency: 1,
      backoff: { baseMs: 10_000, maxMs: 10_000 },
      handler: (k) => {
        seen.push(k);
        return k === 'bad' ? Promise.reject(new Error('bad')) : Promise.resolve();
      },
    });
    q.resume();
    q.add('bad');
    q.add('good');
    await until(() => seen.length === 2);
    expect(q.failuresOf('bad')).toBe(1);
    expect(q.delayedCount).toBe(1);
    expect(q.failuresOf('good')).toBe(0);
    await q.close();
    expect(q.delayedCount).toBe(0);
  });

  it('bounds concurrency', async () => {
    const gate = deferred();
    let running = 0;
    let maxRunning = 0;
    const q = new WorkQueue({
      concurrency: 3,
      backoff: { baseMs: 10, maxMs: 10 },
      handler: async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await gate.promise;
        running--;
      },
    });
    q.resume();
    for (let i = 0; i < 10; i++) q.add(`k${i}`);
    await until(() => running === 3);
    expect(q.depth).toBe(7);
    gate.resolve();
    await until(() => q.depth === 0 && q.activeCount === 0);
    expect(maxRunning).toBe(3);
    await q.close();
  });

  it('honours requeueAfterMs and lets an earlier add win over a later delay', async () => {
    let runs = 0;
    const q = new WorkQueue({
      concurrency: 1,
      backoff: { baseMs: 10, maxMs: 10 },
      handler: () => {
        runs++;
        return Promise.resolve(runs === 1 ? { requeueAfterMs: 30 } : undefined);
      },
    });
    q.resume();
    q.add('a');
    await until(() => runs === 2);
    q.addAfter('a', 60_000);
    q.addAfter('a', 10);
    await until(() => runs === 3);
    expect(q.delayedCount).toBe(0);
    await q.close();
  });

  it('pause lets running handlers finish and starts no new ones', async () => {
    const gate = deferred();
    const seen: string[] = [];
    const q = new WorkQueue({
      concurrency: 1,
      backoff: { baseMs: 10, maxMs: 10 },
      handler: async (k) => {
        seen.push(k);
        if (k === 'a') await gate.promise;
      },
    });
    q.resume();
    q.add('a');
    q.add('b');
    await until(() => seen.length === 1);
    q.pause();
    gate.resolve();
    await q.idle();
    await sleep(10);
    expect(seen).toEqual(['a']);
    expect(q.depth).toBe(1);
    await q.close();
  });
});

describe('WorkQueue progress', () => {
  it('reports a stall while work waits and no handler finishes, never while idle or paused', async () => {
    const hang = deferred();
    const queue = new WorkQueue({
      handler: (key) => (key === 'stuck' ? hang.promise : Promise.resolve()),
      concurrency: 1,
      backoff: { baseMs: 10, maxMs: 10 },
    });
    const t0 = Date.now();
    expect(queue.stalledForMs(t0 + 60_000)).toBe(0);
    queue.add('stuck');
    queue.add('next');
    expect(queue.stalledForMs(t0 + 60_000)).toBe(0); // paused: not leading
    queue.resume();
    await until(() => queue.activeCount === 1);
    expect(queue.stalledForMs(Date.now() + 60_000)).toBeGreaterThanOrEqual(59_000);
    // A bounded wait for the running handler gives up and says so.
    expect(await queue.idle(20)).toBe(false);
    hang.resolve();
    await until(() => queue.activeCount === 0 && queue.depth === 0);
    expect(queue.stalledForMs(Date.now() + 60_000)).toBe(0);
    expect(await queue.idle(20)).toBe(true);
  });
});
