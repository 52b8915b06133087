import { createHash } from 'node:crypto';
import type { Problem } from '../errors.ts';
import type { ShareItem } from './share-list.ts';

/** One share file, validated: the file's own problems (syntax, not a list) and its items. */
export interface ValidatedShareFile {
  readonly problems: readonly Problem[];
  readonly items: readonly ShareItem[];
}

/**
 * The validated items of each share file, kept between loads of one frontend config: a reload
 * re-validates only the files whose text, or whatever else validation depends on (`context`: the
 * config's provider names), changed. The auth endpoint's 16 shard files hold tens of thousands of
 * shares; the operator rewrites one shard per change, so a reload costs about a sixteenth of a
 * full load. The cross-file duplicate check runs over every item each time (lib/config/share-list.ts).
 */
export class ShareFileCache {
  private readonly byPath = new Map<string, { key: string; file: ValidatedShareFile }>();

  /**
   * The file at `path` holding `bytes`, validated: as kept when its path, text and `context` are
   * those of the kept one, else as `validate` finds it (then kept).
   */
  file(path: string, bytes: Buffer, context: string, validate: () => ValidatedShareFile): ValidatedShareFile {
    const key = `${createHash('sha256').update(bytes).digest('hex')}\n${context}`;
    const kept = this.byPath.get(path);
    if (kept?.key === key) return kept.file;
    const file = validate();
    this.byPath.set(path, { key, file });
    return file;
  }

  /** Forgets every file but `paths` (the files of the latest load), so removed shards free their memory. */
  keepOnly(paths: ReadonlySet<string>): void {
    for (const path of this.byPath.keys()) if (!paths.has(path)) this.byPath.delete(path);
  }
}
