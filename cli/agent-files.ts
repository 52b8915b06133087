import type { Command } from 'commander';
import { resolveDataDir } from '../lib/data-dir.ts';
import { SvcError } from '../lib/errors.ts';
import {
  enrollmentPath,
  environmentPath,
  readEnrollment,
  readEnvironment,
  type EnrollmentFile,
  type EnvironmentFile,
} from '../lib/remoting/files.ts';

/**
 * Gives `command` the agent's `--data-dir` option and runs `action` with the directory resolved
 * (flag, then $SVC_DATA_DIR, then ~/.svc) and the command's other options.
 */
export function onAgentDataDir<O extends object>(
  command: Command,
  action: (dataDir: string, opts: O) => Promise<void>,
): Command {
  return command
    .option(...AGENT_DATA_DIR_OPTION)
    .action((opts: O & { dataDir?: string }) => action(resolveDataDir(opts.dataDir), opts));
}

/** `--data-dir` of the commands that read or write the agent's environment and enrollment files. */
export const AGENT_DATA_DIR_OPTION = [
  '--data-dir <dir>',
  "the agent's data directory (default $SVC_DATA_DIR or ~/.svc)",
] as const;

/** The environment `svc enable` recorded, or a `not_enabled` error naming the file (and `next`, a hint). */
export function requireEnvironment(dataDir: string, next = ''): EnvironmentFile {
  const env = readEnvironment(dataDir);
  if (!env) throw new SvcError('not_enabled', `this agent is not enabled (no ${environmentPath(dataDir)})${next}`);
  return env;
}

/** The enrollment `svc agent enroll` recorded, or a `not_enrolled` error naming the file. */
export function requireEnrollment(dataDir: string): EnrollmentFile {
  const enrollment = readEnrollment(dataDir);
  if (!enrollment) throw new SvcError('not_enrolled', `this agent is not enrolled (no ${enrollmentPath(dataDir)})`);
  return enrollment;
}
