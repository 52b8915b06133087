import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/logger.ts';
import { Controller, type ReconcileResult } from './controller.ts';
import { Leadership } from './leadership.ts';
import { OperatorMetrics } from './metrics.ts';

describe('Leadership', () => {
  it('steps down within its deadline even when a reconcile hangs, and says how many still run', async () => {
    let release = (): void => {};
    const hanging = new Promise<ReconcileResult>((resolve) => (release = () => resolve({ result: 'success' })));
    const metrics = new OperatorMetrics();
    const logger = createLogger('test', { level: 'error', destination: new Writable({ write: (_c, _e, cb) => cb() }) });
    const controller = new Controller(
      { kind: 'Share', watches: { keys: ['ns/stuck'] }, reconcile: () => hanging },
      { metrics, logger, concurrency: 1, backoff: { baseMs: 10, maxMs: 10 } },
    );
    const leadership = new Leadership({
      controllers: [controller],
      synced: () => true,
      beforeStart: () => {},
      metrics,
    });
    leadership.started();
    const deadline = Date.now() + 2000;
    while (leadership.inFlight === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(leadership.inFlight).toBe(1);

    expect(await leadership.stopped(50)).toBe(false);
    expect(leadership.isLeading).toBe(false);
    expect(leadership.inFlight).toBe(1);
    release();
    expect(await leadership.stopped(1000)).toBe(true);
    expect(await leadership.close(1000)).toBe(true);
  });
});
