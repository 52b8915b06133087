import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { parseYamlText, type ConfigReader } from '../config-reader.ts';
import { ConfigError, errorText, problem } from '../errors.ts';
import { ShareFileCache, type ValidatedShareFile } from './share-file-cache.ts';
import { validateShareList, type ShareItem } from './share-list.ts';

/**
 * The shares of the `*.yaml` files of a frontend config's `share_directory`: each file's items, in
 * name order; `providerNames` are the config's providers, undefined when they are not valid. A
 * missing directory or file holds no shares: Kubernetes mounts an optional Secret that does not exist
 * (yet) as no file. Hidden entries are skipped: a projected Secret volume keeps its real files in
 * `..data/` and shows each key as a symlink into it. Every unreadable or malformed file is a problem
 * at its own path (recorded here, in file order), so one pass reports them all; the items' own
 * problems are left to the caller, with the duplicate check. A file whose text and providers are
 * those `cache` kept is not validated again.
 */
export function readShareDirectory(
  r: ConfigReader,
  dir: string,
  providerNames: readonly string[] | undefined,
  cache: ShareFileCache = new ShareFileCache(),
): (readonly ShareItem[])[] {
  const paths = listShareFiles(r, dir).map((name) => joinPath(dir, name));
  cache.keepOnly(new Set(paths));
  const context = JSON.stringify(providerNames ?? null);
  const files: (readonly ShareItem[])[] = [];
  for (const path of paths) {
    const bytes = readShareFile(r, path);
    if (bytes === undefined) continue;
    const file = cache.file(path, bytes, context, () => validateShareFile(path, bytes, providerNames));
    for (const p of file.problems) r.problem(p.path, p.message, p.code);
    files.push(file.items);
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

/** The bytes of one share file; undefined when it is gone or was recorded as a problem. */
function readShareFile(r: ConfigReader, path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') r.problem(path, `cannot read: ${errorText(err)}`);
    return undefined;
  }
}

/** One share file's text parsed and each of its shares validated; an empty file holds none. */
function validateShareFile(
  path: string,
  bytes: Buffer,
  providerNames: readonly string[] | undefined,
): ValidatedShareFile {
  let doc: unknown;
  try {
    doc = parseYamlText(bytes.toString('utf8'), path);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { problems: err.problems.map((p) => problem(path, p.message, p.code)), items: [] };
  }
  if (doc === undefined || doc === null) return { problems: [], items: [] };
  if (!Array.isArray(doc))
    return {
      problems: [problem(path, 'must be a list of shares (the format of the frontend config’s shares:)')],
      items: [],
    };
  return { problems: [], items: validateShareList(doc, path, providerNames) };
}
