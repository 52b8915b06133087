import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { parseYamlText, type ConfigReader } from '../config-reader.ts';
import { ConfigError, errorText } from '../errors.ts';

/** One share file of a `share_directory`: its path and its parsed document (a list of shares). */
export interface ShareFile {
  readonly path: string;
  readonly shares: readonly unknown[];
}

/**
 * The `*.yaml` files of a frontend config's `share_directory`, in name order. A missing directory
 * or file holds no shares: Kubernetes mounts an optional Secret that does not exist (yet) as no
 * file. Hidden entries are skipped: a projected Secret volume keeps its real files in `..data/`
 * and shows each key as a symlink into it. Every unreadable or malformed file is a problem at its
 * own path, so one pass reports them all.
 */
export function readShareFiles(r: ConfigReader, dir: string): ShareFile[] {
  const names = listShareFiles(r, dir);
  const files: ShareFile[] = [];
  for (const name of names) {
    const path = joinPath(dir, name);
    const doc = readShareFile(r, path);
    if (doc === undefined || doc === null) continue;
    if (!Array.isArray(doc)) {
      r.problem(path, 'must be a list of shares (the format of the frontend config’s shares:)');
      continue;
    }
    files.push({ path, shares: doc });
  }
  return files;
}

/**
 * What changes when any share file of `dir` does (names, inodes, sizes, modification times, with
 * symlinks followed): Kubernetes replaces a mounted Secret's files by swapping the `..data`
 * symlink, which gives every file a new inode. Empty when the directory does not exist.
 */
export function shareDirectoryStamp(dir: string): string {
  let names: string[];
  try {
    names = shareFileNames(dir);
  } catch {
    return '';
  }
  return names
    .map((name) => {
      try {
        const s = statSync(joinPath(dir, name));
        return `${name}:${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return `${name}:-`;
      }
    })
    .join('\n');
}

function shareFileNames(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.yaml') && !name.startsWith('.'))
    .sort();
}

function listShareFiles(r: ConfigReader, dir: string): string[] {
  try {
    return shareFileNames(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    r.problem(
      'share_directory',
      code === 'ENOTDIR' ? `${dir} is not a directory` : `cannot read ${dir}: ${errorText(err)}`,
    );
    return [];
  }
}

/** The parsed document of one share file; undefined when it is gone or was recorded as a problem. */
function readShareFile(r: ConfigReader, path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') r.problem(path, `cannot read: ${errorText(err)}`);
    return undefined;
  }
  try {
    return parseYamlText(text, path);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const p of err.problems) r.problem(path, p.message);
    return undefined;
  }
}
