import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Lays `files` out in `dir` as the kubelet does for a projected Secret volume, and updates it the
 * same way: the files go into a new timestamped directory, `..data` is swapped to it atomically
 * (rename of a new symlink), and each file name is a symlink into `..data`.
 */
export function projectFiles(dir: string, files: Record<string, string>, generation: number): void {
  mkdirSync(dir, { recursive: true });
  const real = `..2026_11_27_${generation}`;
  mkdirSync(join(dir, real));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, real, name), text);
  symlinkSync(real, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  for (const name of Object.keys(files)) {
    try {
      symlinkSync(join('..data', name), join(dir, name));
    } catch {
      // linked by an earlier generation
    }
  }
}
