import { closeSync, openSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { ensureDataDir } from '../lib/data-dir.ts';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { removeStaleTemporaries, writeFileAtomic } from '../lib/atomic-file.ts';
import { SvcError, errorText } from '../lib/errors.ts';
import type { RegistrationRecord, RegistrationStore, TokenReservation } from './registration-store.ts';
import type { AccountRecord, ControllerStore, EnrollmentRecord, EnvironmentRecord } from './store.ts';

interface Document {
  version: 1;
  accounts: AccountRecord[];
  environments: EnvironmentRecord[];
  enrollments: EnrollmentRecord[];
  /** The share registry (absent in files written before tunnels). */
  shares?: RegistrationRecord[];
  /** Freed share tokens in quarantine (absent in files written before it). */
  reservations?: TokenReservation[];
}

export const CONTROLLER_STATE_FILE = 'controller.json';
const LOCK_STALE_MS = 10_000;

/**
 * The single-machine controller store: one JSON document in the data directory (mode 0600),
 * shared by the running controller and the admin CLI (`svc admin create account` writes while the
 * controller runs). So every read re-reads the file when it changed, and every change is a
 * read-modify-write under an exclusive lock file (`controller.json.lock`, created with O_EXCL; a
 * lock older than 10 s is taken as left by a crash), written atomically (temp file, fsync, rename).
 */
export class ControllerFileStore implements ControllerStore, RegistrationStore {
  readonly path: string;
  private readonly lockPath: string;
  private cached: { ino: number; mtimeMs: number; size: number; doc: Document } | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    ensureDataDir(dataDir);
    this.path = join(dataDir, CONTROLLER_STATE_FILE);
    removeStaleTemporaries(this.path);
    this.lockPath = `${this.path}.lock`;
    this.read();
  }

  createAccount(account: AccountRecord): Promise<void> {
    return this.change((doc) => {
      const email = account.email.toLowerCase();
      if (doc.accounts.some((a) => a.id === account.id || a.email.toLowerCase() === email)) {
        throw conflict(`an account for ${account.email} already exists`);
      }
      doc.accounts.push({ ...account });
    });
  }

  getAccount(id: string): Promise<AccountRecord | undefined> {
    return this.find((doc) => doc.accounts.find((a) => a.id === id));
  }

  findAccountByEmail(email: string): Promise<AccountRecord | undefined> {
    const lower = email.toLowerCase();
    return this.find((doc) => doc.accounts.find((a) => a.email.toLowerCase() === lower));
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return (await this.snapshot()).accounts.map((a) => ({ ...a }));
  }

  createEnvironment(environment: EnvironmentRecord): Promise<void> {
    return this.change((doc) => {
      if (!doc.accounts.some((a) => a.id === environment.accountId)) {
        throw new SvcError('not_found', `unknown account ${environment.accountId}`, { status: 404 });
      }
      if (doc.environments.some((e) => e.envZId === environment.envZId)) {
        throw conflict(`environment ${environment.envZId} already exists`);
      }
      doc.environments.push({ ...environment });
    });
  }

  getEnvironment(envZId: string): Promise<EnvironmentRecord | undefined> {
    return this.find((doc) => doc.environments.find((e) => e.envZId === envZId));
  }

  async listEnvironments(accountId: string): Promise<EnvironmentRecord[]> {
    return (await this.snapshot()).environments.filter((e) => e.accountId === accountId).map((e) => ({ ...e }));
  }

  deleteEnvironment(envZId: string): Promise<boolean> {
    return this.change((doc) => {
      const before = doc.environments.length;
      doc.environments = doc.environments.filter((e) => e.envZId !== envZId);
      doc.enrollments = doc.enrollments.filter((e) => e.envZId !== envZId);
      doc.shares = (doc.shares ?? []).filter((s) => s.envZId !== envZId);
      return doc.environments.length !== before;
    });
  }

  createEnrollment(enrollment: EnrollmentRecord): Promise<void> {
    return this.change((doc) => {
      if (!doc.environments.some((e) => e.envZId === enrollment.envZId)) {
        throw new SvcError('not_found', `unknown environment ${enrollment.envZId}`, { status: 404 });
      }
      if (doc.enrollments.some((e) => e.envZId === enrollment.envZId || e.id === enrollment.id)) {
        throw conflict(`environment ${enrollment.envZId} is already enrolled`);
      }
      doc.enrollments.push({ ...enrollment });
    });
  }

  getEnrollment(id: string): Promise<EnrollmentRecord | undefined> {
    return this.find((doc) => doc.enrollments.find((e) => e.id === id));
  }

  getEnrollmentByEnvironment(envZId: string): Promise<EnrollmentRecord | undefined> {
    return this.find((doc) => doc.enrollments.find((e) => e.envZId === envZId));
  }

  deleteEnrollment(id: string): Promise<boolean> {
    return this.change((doc) => {
      const before = doc.enrollments.length;
      doc.enrollments = doc.enrollments.filter((e) => e.id !== id);
      return doc.enrollments.length !== before;
    });
  }

  async listRegistrations(): Promise<RegistrationRecord[]> {
    return ((await this.snapshot()).shares ?? []).map((s) => ({ ...s }));
  }

  putRegistration(record: RegistrationRecord): Promise<void> {
    return this.change((doc) => {
      const shares = doc.shares ?? [];
      const owner = shares.find((s) => s.token === record.token);
      if (owner && owner.envZId !== record.envZId) {
        throw new SvcError('share_token_taken', `share token ${record.token} belongs to another environment`, {
          status: 409,
        });
      }
      doc.shares = [...shares.filter((s) => s.token !== record.token), { ...record }];
    });
  }

  deleteRegistration(token: string, envZId: string): Promise<boolean> {
    return this.change((doc) => {
      const before = (doc.shares ?? []).length;
      doc.shares = (doc.shares ?? []).filter((s) => !(s.token === token && s.envZId === envZId));
      return doc.shares.length !== before;
    });
  }

  deleteRegistrationsOf(envZId: string): Promise<string[]> {
    return this.change((doc) => {
      const removed = (doc.shares ?? []).filter((s) => s.envZId === envZId).map((s) => s.token);
      doc.shares = (doc.shares ?? []).filter((s) => s.envZId !== envZId);
      return removed;
    });
  }

  async listReservations(): Promise<TokenReservation[]> {
    return ((await this.snapshot()).reservations ?? []).map((r) => ({ ...r }));
  }

  putReservation(reservation: TokenReservation): Promise<void> {
    return this.change((doc) => {
      const others = (doc.reservations ?? []).filter((r) => r.token !== reservation.token);
      doc.reservations = [...others, { ...reservation }];
    });
  }

  deleteReservation(token: string): Promise<boolean> {
    return this.change((doc) => {
      const before = (doc.reservations ?? []).length;
      doc.reservations = (doc.reservations ?? []).filter((r) => r.token !== token);
      return doc.reservations.length !== before;
    });
  }

  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
  }

  private async find<T extends object>(pick: (doc: Document) => T | undefined): Promise<T | undefined> {
    const found = pick(await this.snapshot());
    return found ? { ...found } : undefined;
  }

  private snapshot(): Promise<Document> {
    return Promise.resolve(this.read());
  }

  /** Serialized in this process, locked across processes; `apply` mutates a fresh copy. */
  private change<T>(apply: (doc: Document) => T): Promise<T> {
    const run = this.queue.then(async () => {
      await this.lock();
      try {
        const doc = structuredClone(this.read());
        const result = apply(doc);
        try {
          writeFileAtomic(this.path, `${JSON.stringify(doc, null, 2)}\n`);
        } catch (err) {
          throw new SvcError('store_write_failed', `cannot write ${this.path}: ${errorText(err)}`, { cause: err });
        }
        this.cached = undefined;
        return result;
      } finally {
        this.unlock();
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  private read(): Document {
    let stat;
    try {
      stat = statSync(this.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        return { version: 1, accounts: [], environments: [], enrollments: [] };
      throw new SvcError('store_unreadable', `cannot read ${this.path}: ${errorText(err)}`, { cause: err });
    }
    const c = this.cached;
    // Every write renames a new file into place, so the inode changes with each version.
    if (c && c.ino === stat.ino && c.mtimeMs === stat.mtimeMs && c.size === stat.size) return c.doc;
    const doc = parse(this.path, readFileSync(this.path, 'utf8'));
    this.cached = { ino: stat.ino, mtimeMs: stat.mtimeMs, size: stat.size, doc };
    return doc;
  }

  private async lock(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        closeSync(openSync(this.lockPath, 'wx', 0o600));
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      try {
        if (Date.now() - statSync(this.lockPath).mtimeMs > LOCK_STALE_MS) unlinkSync(this.lockPath);
      } catch {
        // the holder released it meanwhile
      }
      if (attempt > 2000) throw new SvcError('store_locked', `${this.lockPath} is held by another process`);
      await sleep(5);
    }
  }

  private unlock(): void {
    try {
      unlinkSync(this.lockPath);
    } catch {
      // already removed as stale by another process
    }
  }
}

function parse(path: string, text: string): Document {
  let doc: Partial<Document> | null;
  try {
    doc = JSON.parse(text) as Partial<Document> | null;
  } catch (err) {
    throw new SvcError('store_corrupt', `${path} is not valid JSON (${errorText(err)})`);
  }
  if (
    !doc ||
    doc.version !== 1 ||
    !Array.isArray(doc.accounts) ||
    !Array.isArray(doc.environments) ||
    !Array.isArray(doc.enrollments)
  ) {
    throw new SvcError('store_corrupt', `${path} is not an svc controller state file (version 1)`);
  }
  return doc as Document;
}

function conflict(message: string): SvcError {
  return new SvcError('conflict', message, { status: 409 });
}
