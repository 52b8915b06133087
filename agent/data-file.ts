import { watch, type FSWatcher } from 'node:fs';
import { errorText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';

export interface FollowedFile {
  /** Stops watching and waits for the change being applied, if any. */
  close(): Promise<void>;
}

/**
 * Follows one file of the agent's data directory (the enrollment file, the environment file):
 * `apply` runs at start and again after every change of the file, one run at a time and in order, so
 * `svc agent enroll` or `svc enable` in another process takes effect without a restart. A file that
 * cannot be read counts as absent (logged under `role`, e.g. `remoting`); a directory that cannot
 * be watched is logged once and the file is read only at start.
 */
export function followDataFile<T>(
  source: { dataDir: string; file: string; read: (dataDir: string) => T | undefined },
  role: string,
  logger: Logger,
  apply: (value: T | undefined) => Promise<void>,
): FollowedFile {
  const { dataDir, file, read } = source;
  let chain: Promise<void> = Promise.resolve();
  const sync = () => {
    chain = chain.then(() => {
      let value: T | undefined;
      try {
        value = read(dataDir);
      } catch (err) {
        logger.error({ err: errorText(err) }, `${role}: cannot use ${file}; it counts as absent until it is fixed`);
      }
      return apply(value);
    });
  };
  sync();
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dataDir, (_event, name) => {
      if (name === null || name === file) sync();
    });
  } catch (err) {
    logger.warn({ err: errorText(err) }, `${role}: cannot watch the data directory; changes of ${file} need a restart`);
  }
  return {
    close: async () => {
      watcher?.close();
      await chain;
    },
  };
}
