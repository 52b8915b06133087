import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { SvcError } from './errors.ts';
import { join, resolve } from 'node:path';

const SOCKET_FILE = 'agent.sock';

/**
 * The data directory: `--data-dir`, else `$SVC_DATA_DIR`, else the serve config's `data_dir`, else
 * `~/.svc`. It holds the state file and the local API socket, and is created with mode 0700.
 */
export function resolveDataDir(flag?: string, configured?: string): string {
  const chosen = flag ?? (process.env.SVC_DATA_DIR || undefined) ?? configured ?? join(homedir(), '.svc');
  return resolve(chosen.startsWith('~/') ? join(homedir(), chosen.slice(2)) : chosen);
}

/** The local API listens on a Unix socket in the data directory (owner-only, like the folder). */
export function socketPath(dataDir: string): string {
  return join(dataDir, SOCKET_FILE);
}

/**
 * Creates the data directory owner-only (0700), or makes an existing one so: it holds the share
 * table, enrollment and identity keys and account tokens. A directory with wider permissions is
 * tightened (and `warn` told, with the old mode); one owned by another user is refused, since
 * tightening it would lock its owner out and using it would expose svc's secrets to that user.
 */
export function ensureDataDir(dir: string, warn: (message: string) => void = () => undefined): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = statSync(dir);
  if (!st.isDirectory()) throw new SvcError('file_unreadable', `data directory ${dir} is not a directory`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new SvcError(
      'data_dir_insecure',
      `data directory ${dir} belongs to user ${st.uid}, not to this user (${uid}); it holds keys and tokens, so svc only uses a directory of its own (choose another with --data-dir)`,
    );
  }
  const mode = st.mode & 0o777;
  if ((mode & 0o077) !== 0) {
    chmodSync(dir, 0o700);
    warn(
      `data directory ${dir} had mode ${mode.toString(8).padStart(4, '0')}; tightened to 0700 (it holds keys and tokens)`,
    );
  }
}
