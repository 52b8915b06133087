import { closeSync, fsyncSync, openSync, readdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Writes `text` to `path` so that readers see the old or the new content, never a torn file:
 * temporary file (mode 0600, created exclusively), fsync, rename over the target, fsync the folder.
 */
export function writeFileAtomic(path: string, text: string, mode = 0o600): void {
  const tmp = temporaryPath(path);
  const fd = openSync(tmp, 'wx', mode);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
  const dirFd = openSync(dirname(path), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/**
 * {@link writeFileAtomic} with the same steps and guarantees, off the event loop: the fsyncs run on
 * libuv's thread pool, so a process keeps serving while its state file is being made durable (the
 * agent's store collects the changes that arrive meanwhile into its next write).
 */
export async function writeFileAtomicAsync(path: string, text: string, mode = 0o600): Promise<void> {
  const tmp = temporaryPath(path);
  const file = await open(tmp, 'wx', mode);
  try {
    try {
      await file.writeFile(text);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
  } catch (err) {
    // A live process's temporary would outlast removeStaleTemporaries until the next start.
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** `<name>.<pid>.<time>.tmp`: the pid lets {@link removeStaleTemporaries} tell a dead writer's file. */
function temporaryPath(path: string): string {
  return `${path}.${process.pid}.${Date.now()}.tmp`;
}

/**
 * Removes the temporary files a writer of `path` left when it was killed between creating and
 * renaming one (`<name>.<pid>.<time>.tmp`). Only files of processes that are gone are removed, so
 * a writer at work in another process keeps its file. Returns the names removed.
 */
export function removeStaleTemporaries(path: string): string[] {
  const prefix = `${basename(path)}.`;
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dirname(path));
  } catch {
    return removed;
  }
  for (const name of names) {
    const match = /^(\d+)\.\d+\.tmp$/.exec(name.startsWith(prefix) ? name.slice(prefix.length) : '');
    if (!match || processAlive(Number(match[1]))) continue;
    try {
      unlinkSync(join(dirname(path), name));
      removed.push(name);
    } catch {
      // Gone already, or not ours to remove: nothing to clean.
    }
  }
  return removed;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
