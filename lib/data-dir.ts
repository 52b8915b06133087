import { homedir } from 'node:os';
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
