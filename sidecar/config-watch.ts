import { statSync } from 'node:fs';
import { shareDirectoryStamp } from '../lib/config/share-directory.ts';

/** How often the frontend looks at its config file and share directory. */
export const CONFIG_POLL_MS = 2000;

/**
 * Calls `onChange` when the config file or any share file of `shareDirectory()` (read anew each
 * time: a reload may name another) changed since the last look. Polled, not `fs.watch`: Kubernetes
 * updates a mounted Secret by swapping a symlink and removing the old directory, which inotify
 * watches of the files themselves do not follow. Returns the function that stops the polling.
 */
export function watchFrontendConfig(
  path: string,
  shareDirectory: () => string | undefined,
  onChange: () => void,
  intervalMs = CONFIG_POLL_MS,
): () => void {
  const stamp = (): string => {
    const dir = shareDirectory();
    return `${fileStamp(path)}\n${dir === undefined ? '' : shareDirectoryStamp(dir)}`;
  };
  let last = stamp();
  const timer = setInterval(() => {
    const now = stamp();
    if (now === last) return;
    last = now;
    onChange();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

function fileStamp(path: string): string {
  try {
    const s = statSync(path);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return '-';
  }
}
