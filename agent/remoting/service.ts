import type { BackoffPolicy } from '../../lib/backoff.ts';
import type { Logger } from '../../lib/logger.ts';
import { followDataFile } from '../data-file.ts';
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
  backoff?: BackoffPolicy;
}): RunningRemoting {
  const { dataDir, executor, logger } = options;
  let current: { file: EnrollmentFile; client: RemotingClient } | undefined;
  const source = { dataDir, file: ENROLLMENT_FILE, read: readEnrollment };
  const followed = followDataFile(source, 'remoting', logger, async (file) => {
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
  return {
    close: async () => {
      await followed.close();
      await current?.client.close();
      current = undefined;
    },
  };
}
