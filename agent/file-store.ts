import { readFileSync } from 'node:fs';
import { ensureDataDir } from '../lib/data-dir.ts';
import { join } from 'node:path';
import { removeStaleTemporaries, writeFileAtomicAsync } from '../lib/atomic-file.ts';
import { SvcError, errorText } from '../lib/errors.ts';
import type { AccessRecord, AgentStore, ShareRecord } from './store.ts';

interface StoreDocument {
  version: 1;
  shares: ShareRecord[];
  accesses: AccessRecord[];
}

export const STORE_FILE = 'state.json';

/** Makes `text` the content of `path` durably and atomically; injectable so tests can count or fail writes. */
export type StateWriter = (path: string, text: string) => Promise<void>;

export interface FileStoreOptions {
  /** Defaults to {@link writeFileAtomicAsync}. */
  readonly write?: StateWriter;
}

/** A change as a function of the document, so it can be checked again on another document. */
type Edit<T> = (doc: StoreDocument) => { next: StoreDocument | undefined; result: T };

/** A change and its caller's promise. */
interface Waiting {
  readonly edit: Edit<unknown>;
  /** What the caller gets once the change is written (`deleteShare`: whether it existed). */
  result: unknown;
  readonly resolve: (result: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * The single-machine store: one JSON document in the data directory, written atomically (a
 * temporary file, fsync, rename over the old one, fsync the folder), so a crash leaves either the
 * old or the new state and never a torn file. Mode 0600: shares may name internal URLs and folders.
 * One process owns the file (`svc serve` refuses a second instance).
 *
 * Writes are grouped: a change is checked and applied to the in-memory document at once (reads and
 * the conflict checks of later changes see it), then waits for the next write; while a write is in
 * flight, the changes arriving meanwhile all go into the one write after it. Rewriting the whole
 * file is O(shares), so one write per change made creating n shares O(n²) (docs/benchmarks.md,
 * "Controller"). A caller's promise settles only after a write holding its change: resolved once
 * that write is fsynced and renamed into place, so a resolved change is on disk.
 *
 * A failed write rejects every caller whose change it carried (code `store_write_failed`) and
 * takes those changes out of memory: the store reads the file back and again holds what it holds
 * (the old document; the new one only if the folder's fsync, after the rename, failed). The changes
 * that arrived during that write are checked again on the file's state and go into the next write;
 * one whose check no longer holds (an access to a share whose creation failed) is rejected with that
 * check's error, and a delete whose target is gone resolves `false`.
 */
export class FileStore implements AgentStore {
  readonly path: string;
  private readonly write: StateWriter;
  /** What the file holds. */
  private written: StoreDocument;
  /** `written` with the changes of the write in flight and of `waiting` applied. */
  private doc: StoreDocument;
  private waiting: Waiting[] = [];
  private flushing = false;

  constructor(dataDir: string, options: FileStoreOptions = {}) {
    this.path = join(dataDir, STORE_FILE);
    this.write = options.write ?? writeFileAtomicAsync;
    ensureDataDir(dataDir);
    // Left by a writer killed mid-write; the state file itself is always whole (old or new).
    removeStaleTemporaries(this.path);
    this.written = readDocument(this.path);
    this.doc = this.written;
  }

  listShares(): Promise<ShareRecord[]> {
    return Promise.resolve(this.doc.shares.map((s) => ({ ...s })));
  }

  getShare(token: string): Promise<ShareRecord | undefined> {
    const found = this.doc.shares.find((s) => s.token === token);
    return Promise.resolve(found ? { ...found } : undefined);
  }

  createShare(share: ShareRecord): Promise<void> {
    return this.change((doc) => {
      if (doc.shares.some((s) => s.token === share.token)) {
        throw new SvcError('conflict', `share token ${share.token} already exists`, { status: 409 });
      }
      return { next: { ...doc, shares: [...doc.shares, { ...share }] }, result: undefined };
    });
  }

  deleteShare(token: string): Promise<boolean> {
    return this.change((doc) => {
      if (!doc.shares.some((s) => s.token === token)) return { next: undefined, result: false };
      const next = {
        ...doc,
        shares: doc.shares.filter((s) => s.token !== token),
        accesses: doc.accesses.filter((a) => a.shareToken !== token),
      };
      return { next, result: true };
    });
  }

  listAccesses(): Promise<AccessRecord[]> {
    return Promise.resolve(this.doc.accesses.map((a) => ({ ...a })));
  }

  createAccess(access: AccessRecord): Promise<void> {
    return this.change((doc) => {
      if (doc.accesses.some((a) => a.token === access.token)) {
        throw new SvcError('conflict', `access token ${access.token} already exists`, { status: 409 });
      }
      // A remote access's share lives on another machine of the account (the installation checked it).
      if (!access.remote && !doc.shares.some((s) => s.token === access.shareToken)) {
        throw new SvcError('not_found', `unknown share token ${access.shareToken}`, { status: 404 });
      }
      return { next: { ...doc, accesses: [...doc.accesses, { ...access }] }, result: undefined };
    });
  }

  deleteAccess(token: string): Promise<boolean> {
    return this.change((doc) => {
      if (!doc.accesses.some((a) => a.token === token)) return { next: undefined, result: false };
      return { next: { ...doc, accesses: doc.accesses.filter((a) => a.token !== token) }, result: true };
    });
  }

  /** Checks and applies `edit` in memory now; settles after the write that carries it. */
  private change<T>(edit: Edit<T>): Promise<T> {
    const { promise, resolve, reject } = Promise.withResolvers<T>();
    this.admit({ edit, result: undefined, resolve: resolve as (result: unknown) => void, reject });
    if (this.waiting.length > 0 && !this.flushing) {
      this.flushing = true;
      // After the I/O callbacks of this turn, so changes arriving together share the first write too.
      setImmediate(() => void this.flush());
    }
    return promise;
  }

  /** Runs the change's check on the current document: settles it at once, or applies it to wait for a write. */
  private admit(w: Waiting): void {
    let outcome;
    try {
      outcome = w.edit(this.doc);
    } catch (err) {
      w.reject(err);
      return;
    }
    if (!outcome.next) {
      w.resolve(outcome.result);
      return;
    }
    this.doc = outcome.next;
    w.result = outcome.result;
    this.waiting.push(w);
  }

  /** Writes until nothing waits; one write carries every change that waited when it started. */
  private async flush(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting;
      this.waiting = [];
      const doc = this.doc;
      try {
        await this.write(this.path, `${JSON.stringify(doc, null, 2)}\n`);
      } catch (err) {
        this.failed(batch, err);
        continue;
      }
      this.written = doc;
      for (const w of batch) w.resolve(w.result);
    }
    this.flushing = false;
  }

  /** Rejects the failed write's changes, drops them from memory, and re-checks the later ones on the file's state. */
  private failed(batch: Waiting[], err: unknown): void {
    const error = new SvcError('store_write_failed', `cannot write ${this.path}: ${errorText(err)}`, { cause: err });
    for (const w of batch) w.reject(error);
    const later = this.waiting;
    this.waiting = [];
    // Read back: the file holds the old document, or the new one when only the last step (the
    // folder's fsync, after the rename) failed. Unreadable: it holds what was last written.
    try {
      this.written = readDocument(this.path);
    } catch {
      // keep `written`
    }
    this.doc = this.written;
    for (const w of later) this.admit(w);
  }
}

function readDocument(path: string): StoreDocument {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, shares: [], accesses: [] };
    throw new SvcError('store_unreadable', `cannot read ${path}: ${errorText(err)}`, { cause: err });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new SvcError('store_corrupt', `${path} is not valid JSON (${errorText(err)}); move it away to start empty`);
  }
  const d = doc as Partial<StoreDocument> | null;
  if (!d || d.version !== 1 || !Array.isArray(d.shares) || !Array.isArray(d.accesses)) {
    throw new SvcError('store_corrupt', `${path} is not an svc state file (version 1); move it away to start empty`);
  }
  return { version: 1, shares: d.shares, accesses: d.accesses };
}
