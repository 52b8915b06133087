import { watch, type FSWatcher } from 'node:fs';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { RemotingClient } from './client.ts';
import type { RemoteExecutor } from './executor.ts';
import { ENROLLMENT_FILE, readEnrollment, type EnrollmentFile } from '../../lib/remoting/files.ts';

export interface RunningRemoting {
  close(): Promise<void>;
}

/**
 * Remote control inside `svc serve`: runs a RemotingClient while `agent-enrollment.json` exists in
 * the data directory. The file is watched, so `svc agent enroll` takes effect without a restart and
 * `svc agent unenroll` stops the connection at once. That is safe: the data directory is 0700 and
 * the file 0600, so whoever can write it can already drive the agent through its local API socket.
 */
export function startRemoting(options: {
  dataDir: string;
  executor: RemoteExecutor;
  logger: Logger;
  backoff?: { minMs: number; maxMs: number };
}): RunningRemoting {
  const { dataDir, executor, logger } = options;
  let current: { file: EnrollmentFile; client: RemotingClient } | undefined;
  let chain: Promise<void> = Promise.resolve();

  const sync = () => {
    chain = chain.then(async () => {
      let file: EnrollmentFile | undefined;
      try {
        file = readEnrollment(dataDir);
      } catch (err) {
        logger.error({ err: errorText(err) }, 'remoting: cannot use the enrollment file; remote control is off');
      }
      if (current && file?.token === current.file.token) return;
      if (current) {
        await current.client.close();
        if (!file) logger.info(`remoting: ${ENROLLMENT_FILE} removed; remote control is off`);
        current = undefined;
      }
      if (!file) return;
      const client = new RemotingClient({
        enrollment: file,
        executor,
        logger,
        ...(options.backoff ? { backoff: options.backoff } : {}),
      });
      current = { file, client };
      client.start();
    });
  };

  sync();
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dataDir, (_event, name) => {
      if (name === null || name === ENROLLMENT_FILE) sync();
    });
  } catch (err) {
    logger.warn(
      { err: errorText(err) },
      'remoting: cannot watch the data directory; enrollment changes need a restart',
    );
  }
  return {
    close: async () => {
      watcher?.close();
      await chain;
      await current?.client.close();
      current = undefined;
    },
  };
}
