import { readFileSync } from 'node:fs';
import { ensureDataDir } from '../lib/data-dir.ts';
import { join } from 'node:path';
import { removeStaleTemporaries, writeFileAtomic } from '../lib/atomic-file.ts';
import { SvcError, errorText } from '../lib/errors.ts';
import type { AccessRecord, AgentStore, ShareRecord } from './store.ts';

interface StoreDocument {
  version: 1;
  shares: ShareRecord[];
  accesses: AccessRecord[];
}

export const STORE_FILE = 'state.json';

/**
 * The single-machine store: one JSON document in the data directory, rewritten atomically (write a
 * temporary file, fsync, rename over the old one, fsync the folder) on every change, so a crash
 * leaves either the old or the new state and never a torn file. Mode 0600: shares may name
 * internal URLs and folders. One process owns the file (`svc serve` refuses a second instance).
 */
export class FileStore implements AgentStore {
  readonly path: string;
  private doc: StoreDocument;
  private writing: Promise<void> = Promise.resolve();

  constructor(dataDir: string) {
    this.path = join(dataDir, STORE_FILE);
    ensureDataDir(dataDir);
    // Left by a writer killed mid-write; the state file itself is always whole (old or new).
    removeStaleTemporaries(this.path);
    this.doc = readDocument(this.path);
  }

  listShares(): Promise<ShareRecord[]> {
    return Promise.resolve(this.doc.shares.map((s) => ({ ...s })));
  }

  getShare(token: string): Promise<ShareRecord | undefined> {
    const found = this.doc.shares.find((s) => s.token === token);
    return Promise.resolve(found ? { ...found } : undefined);
  }

  createShare(share: ShareRecord): Promise<void> {
    if (this.doc.shares.some((s) => s.token === share.token)) {
      return Promise.reject(new SvcError('conflict', `share token ${share.token} already exists`, { status: 409 }));
    }
    return this.commit({ ...this.doc, shares: [...this.doc.shares, { ...share }] });
  }

  async deleteShare(token: string): Promise<boolean> {
    if (!this.doc.shares.some((s) => s.token === token)) return false;
    await this.commit({
      ...this.doc,
      shares: this.doc.shares.filter((s) => s.token !== token),
      accesses: this.doc.accesses.filter((a) => a.shareToken !== token),
    });
    return true;
  }

  listAccesses(): Promise<AccessRecord[]> {
    return Promise.resolve(this.doc.accesses.map((a) => ({ ...a })));
  }

  createAccess(access: AccessRecord): Promise<void> {
    if (this.doc.accesses.some((a) => a.token === access.token)) {
      return Promise.reject(new SvcError('conflict', `access token ${access.token} already exists`, { status: 409 }));
    }
    // A remote access's share lives on another machine of the account (the installation checked it).
    if (!access.remote && !this.doc.shares.some((s) => s.token === access.shareToken)) {
      return Promise.reject(new SvcError('not_found', `unknown share token ${access.shareToken}`, { status: 404 }));
    }
    return this.commit({ ...this.doc, accesses: [...this.doc.accesses, { ...access }] });
  }

  async deleteAccess(token: string): Promise<boolean> {
    if (!this.doc.accesses.some((a) => a.token === token)) return false;
    await this.commit({ ...this.doc, accesses: this.doc.accesses.filter((a) => a.token !== token) });
    return true;
  }

  /** Applies the new document in memory at once (so reads see it) and queues the durable write. */
  private commit(next: StoreDocument): Promise<void> {
    const previous = this.doc;
    this.doc = next;
    const write = this.writing.then(() => writeFileAtomic(this.path, `${JSON.stringify(next, null, 2)}\n`));
    this.writing = write.catch(() => undefined);
    return write.catch((err: unknown) => {
      if (this.doc === next) this.doc = previous;
      throw new SvcError('store_write_failed', `cannot write ${this.path}: ${errorText(err)}`, { cause: err });
    });
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
