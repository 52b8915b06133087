import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '../lib/logger.ts';
import { untilSignal } from '../lib/signals.ts';
import { serveSharedState } from './shared-state.ts';

/**
 * `workers: n` (n > 1): this process becomes the primary of n node:cluster workers, each a whole
 * frontend on the same listener (the primary accepts connections and hands them round-robin), so a
 * CPU-bound frontend uses every core. The primary serves no request; it holds the replay guard and
 * the logged-out sessions for all workers (sidecar/shared-state.ts), replaces a worker that dies
 * and stops them all on SIGTERM/SIGINT. A worker that dies before it listened (a port in use, a bad
 * key) stops the whole frontend instead: replacing it would only repeat the failure.
 */
export async function runPrimary(count: number, log: Logger): Promise<void> {
  serveSharedState(cluster);
  let stopping = false;
  const listening = new WeakSet<Worker>();
  let failed: ((code: number) => void) | undefined;
  const startupFailure = new Promise<number>((resolve) => (failed = resolve));
  const fork = (): void => {
    const worker = cluster.fork();
    worker.once('listening', () => listening.add(worker));
  };
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    if (!listening.has(worker)) {
      log.error({ pid: worker.process.pid, code, signal }, 'frontend worker failed to start; stopping');
      failed?.(code || 1);
      return;
    }
    log.warn({ pid: worker.process.pid, code, signal }, 'frontend worker died; starting another');
    fork();
  });
  for (let i = 0; i < count; i += 1) fork();
  log.info({ workers: count }, 'frontend workers starting');

  const outcome = await Promise.race([untilSignal().then(() => 0), startupFailure]);
  stopping = true;
  const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.isDead()) return resolve();
          w.once('exit', () => resolve());
          w.process.kill('SIGTERM');
        }),
    ),
  );
  if (outcome !== 0) process.exitCode = outcome;
}
