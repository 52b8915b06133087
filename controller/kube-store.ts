import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { SvcError } from '../lib/errors.ts';
import { KubeApiError, KubeClient, isConflict, isNotFound } from '../lib/kube/client.ts';
import { SECRETS, resourcePath, type KubeObject } from '../lib/kube/resources.ts';
import type { RegistrationRecord, RegistrationStore, TokenReservation } from './registration-store.ts';
import type { AccountRecord, ControllerStore, EnrollmentRecord, EnvironmentRecord } from './store.ts';

/** Field manager and `app.kubernetes.io/managed-by` value of every object the controller writes. */
const CONTROLLER_MANAGER = 'svc-controller';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** What a Secret holds: account, account-email (the email index), environment, enrollment. */
export const RECORD_LABEL = 'svc.dev/controller-record';
const ACCOUNT_LABEL = 'svc.dev/account';
const ENROLLMENT_ID_LABEL = 'svc.dev/enrollment-id';
const ENVIRONMENT_LABEL = 'svc.dev/environment';
/** Attempts of a registration write that lost a race (create or update conflict) before giving up. */
const REGISTRATION_ATTEMPTS = 5;
const RECORD_KEY = 'record.json';

type Kind = 'account' | 'account-email' | 'environment' | 'enrollment' | 'share' | 'reservation';

const SAFE_ID = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;

/**
 * A label value / name part for an id: the id itself when it is a short DNS label (the ids the
 * controller issues are 12 base32 characters), otherwise `h` + 40 hex digits of its SHA-256.
 */
function idPart(id: string): string {
  return SAFE_ID.test(id) ? id : `h${createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 40)}`;
}

/** The Secret name of one record. Enrollments are named by their environment: one per environment, atomically. */
function recordName(kind: Kind, key: string): string {
  const prefix = {
    account: 'svc-account',
    'account-email': 'svc-account-email',
    environment: 'svc-env',
    enrollment: 'svc-enrollment',
    share: 'svc-share',
    reservation: 'svc-reservation',
  }[kind];
  if (kind === 'account-email' || kind === 'share' || kind === 'reservation') {
    const text = kind === 'account-email' ? key.toLowerCase() : key;
    return `${prefix}-${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 40)}`;
  }
  return `${prefix}-${idPart(key)}`;
}

interface Stored<T> {
  readonly record: T;
  readonly object: KubeObject;
}

/**
 * The cluster controller's store (`svc controller --store kubernetes --namespace N`): every record is
 * a Secret in the controller's namespace, labelled `app.kubernetes.io/managed-by: svc-controller`,
 * holding the record as JSON (token *hashes* only, never tokens). Names come from ids (or hashes of
 * them), so every lookup on the request path is one GET:
 *
 * - account `svc-account-<id>`; its email index `svc-account-email-<sha256(lower(email))>` is
 *   created first, so two accounts can never share an email (create conflict = already exists);
 * - environment `svc-env-<envZId>`, labelled with its account, owned (ownerReference) by the account;
 * - enrollment `svc-enrollment-<envZId>`: named by its environment, so "one enrollment per
 *   environment" is the API server's create conflict; labelled with its id (lookup by id is a
 *   label-selected list) and owned by the environment Secret, so the garbage collector removes an
 *   enrollment whose environment was deleted in a race;
 * - share registration `svc-share-<sha256(token)>`, labelled with its environment: named by the
 *   token, so two environments claiming one token meet at the API server's create conflict, and the
 *   loser gets `share_token_taken` (updated in place, with resourceVersion);
 * - token reservation `svc-reservation-<sha256(token)>`: a freed token in quarantine (replaced in
 *   place, with resourceVersion).
 *
 * Reads go to the API server every time (no cache), so a second controller, the admin CLI or a
 * restarted process see every change at once; writes are creates (409 = exists) and deletes with a
 * uid precondition, the API server's optimistic concurrency.
 */
export class KubeControllerStore implements ControllerStore, RegistrationStore {
  readonly namespace: string;
  private readonly client: KubeClient;
  private readonly ownsClient: boolean;

  private constructor(client: KubeClient, namespace: string, ownsClient: boolean) {
    this.client = client;
    this.namespace = namespace;
    this.ownsClient = ownsClient;
  }

  static async create(kubeConfig: KubeConfig, namespace: string): Promise<KubeControllerStore> {
    return new KubeControllerStore(await KubeClient.create(kubeConfig), namespace, true);
  }

  /** A store over an existing client (not closed with the store). */
  static over(client: KubeClient, namespace: string): KubeControllerStore {
    return new KubeControllerStore(client, namespace, false);
  }

  async createAccount(account: AccountRecord): Promise<void> {
    const exists = () => conflict(`an account for ${account.email} already exists`);
    const emailName = recordName('account-email', account.email);
    let index: KubeObject;
    try {
      index = await this.createRecord('account-email', emailName, { accountId: account.id });
    } catch (err) {
      if (!isConflict(err)) throw err;
      // An index whose account was never written (a crash between the two creates) is taken over.
      const stale = await this.read<{ accountId: string }>(emailName);
      if (!stale) throw exists();
      if (await this.getAccount(stale.record.accountId)) throw exists();
      await this.deleteObject(stale.object);
      return this.createAccount(account);
    }
    try {
      await this.createRecord('account', recordName('account', account.id), account, {
        labels: { [ACCOUNT_LABEL]: idPart(account.id) },
        exists,
      });
    } catch (err) {
      await this.deleteObject(index);
      throw err;
    }
  }

  async getAccount(id: string): Promise<AccountRecord | undefined> {
    const found = await this.read<AccountRecord>(recordName('account', id));
    return found?.record.id === id ? found.record : undefined;
  }

  async findAccountByEmail(email: string): Promise<AccountRecord | undefined> {
    const index = await this.read<{ accountId: string }>(recordName('account-email', email));
    if (!index) return undefined;
    const account = await this.getAccount(index.record.accountId);
    return account && account.email.toLowerCase() === email.toLowerCase() ? account : undefined;
  }

  async listAccounts(): Promise<AccountRecord[]> {
    const found = await this.list<AccountRecord>('account');
    return found.map((f) => f.record).sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async createEnvironment(environment: EnvironmentRecord): Promise<void> {
    const account = await this.read<AccountRecord>(recordName('account', environment.accountId));
    if (!account || account.record.id !== environment.accountId) {
      throw new SvcError('not_found', `unknown account ${environment.accountId}`, { status: 404 });
    }
    await this.createRecord('environment', recordName('environment', environment.envZId), environment, {
      labels: { [ACCOUNT_LABEL]: idPart(environment.accountId) },
      owner: account.object,
      exists: () => conflict(`environment ${environment.envZId} already exists`),
    });
  }

  async getEnvironment(envZId: string): Promise<EnvironmentRecord | undefined> {
    const found = await this.read<EnvironmentRecord>(recordName('environment', envZId));
    return found?.record.envZId === envZId ? found.record : undefined;
  }

  async listEnvironments(accountId: string): Promise<EnvironmentRecord[]> {
    const found = await this.list<EnvironmentRecord>('environment', `${ACCOUNT_LABEL}=${idPart(accountId)}`);
    return found.map((f) => f.record).filter((e) => e.accountId === accountId);
  }

  async deleteEnvironment(envZId: string): Promise<boolean> {
    const found = await this.read<EnvironmentRecord>(recordName('environment', envZId));
    if (!found || found.record.envZId !== envZId) return false;
    const deleted = await this.deleteObject(found.object);
    const enrollment = await this.read<EnrollmentRecord>(recordName('enrollment', envZId));
    if (enrollment) await this.deleteObject(enrollment.object);
    return deleted;
  }

  async createEnrollment(enrollment: EnrollmentRecord): Promise<void> {
    const environment = await this.read<EnvironmentRecord>(recordName('environment', enrollment.envZId));
    if (!environment || environment.record.envZId !== enrollment.envZId) {
      throw new SvcError('not_found', `unknown environment ${enrollment.envZId}`, { status: 404 });
    }
    const already = () => conflict(`environment ${enrollment.envZId} is already enrolled`);
    if (await this.getEnrollment(enrollment.id)) throw already();
    await this.createRecord('enrollment', recordName('enrollment', enrollment.envZId), enrollment, {
      labels: { [ENROLLMENT_ID_LABEL]: idPart(enrollment.id) },
      owner: environment.object,
      exists: already,
    });
  }

  async getEnrollment(id: string): Promise<EnrollmentRecord | undefined> {
    const found = await this.list<EnrollmentRecord>('enrollment', `${ENROLLMENT_ID_LABEL}=${idPart(id)}`);
    return found.find((f) => f.record.id === id)?.record;
  }

  async getEnrollmentByEnvironment(envZId: string): Promise<EnrollmentRecord | undefined> {
    const found = await this.read<EnrollmentRecord>(recordName('enrollment', envZId));
    return found?.record.envZId === envZId ? found.record : undefined;
  }

  async deleteEnrollment(id: string): Promise<boolean> {
    const found = await this.list<EnrollmentRecord>('enrollment', `${ENROLLMENT_ID_LABEL}=${idPart(id)}`);
    let deleted = false;
    for (const f of found) if (f.record.id === id && (await this.deleteObject(f.object))) deleted = true;
    return deleted;
  }

  async listRegistrations(): Promise<RegistrationRecord[]> {
    return (await this.list<RegistrationRecord>('share')).map((f) => f.record);
  }

  async putRegistration(record: RegistrationRecord): Promise<void> {
    await this.putMutable('share', record.token, record, {
      labels: { [ENVIRONMENT_LABEL]: idPart(record.envZId) },
      check: (found: RegistrationRecord) => {
        if (found.envZId === record.envZId) return;
        throw new SvcError('share_token_taken', `share token ${record.token} belongs to another environment`, {
          status: 409,
        });
      },
    });
  }

  async deleteRegistration(token: string, envZId: string): Promise<boolean> {
    const found = await this.read<RegistrationRecord>(recordName('share', token));
    if (!found || found.record.token !== token || found.record.envZId !== envZId) return false;
    return this.deleteObject(found.object);
  }

  async deleteRegistrationsOf(envZId: string): Promise<string[]> {
    const found = await this.list<RegistrationRecord>('share', `${ENVIRONMENT_LABEL}=${idPart(envZId)}`);
    const removed: string[] = [];
    for (const f of found) {
      if (f.record.envZId === envZId && (await this.deleteObject(f.object))) removed.push(f.record.token);
    }
    return removed;
  }

  async listReservations(): Promise<TokenReservation[]> {
    return (await this.list<TokenReservation>('reservation')).map((f) => f.record);
  }

  async putReservation(reservation: TokenReservation): Promise<void> {
    await this.putMutable('reservation', reservation.token, reservation);
  }

  async deleteReservation(token: string): Promise<boolean> {
    const found = await this.read<TokenReservation>(recordName('reservation', token));
    if (!found || found.record.token !== token) return false;
    return this.deleteObject(found.object);
  }

  close(): Promise<void> {
    if (this.ownsClient) this.client.close();
    return Promise.resolve();
  }

  /**
   * Inserts or replaces the one mutable record of `kind` for a token (updated in place with its
   * resourceVersion); `check` may refuse the record found. A write that loses a race reads again.
   */
  private async putMutable<T extends { token: string }>(
    kind: 'share' | 'reservation',
    token: string,
    record: T,
    options: { labels?: Record<string, string>; check?: (found: T) => void } = {},
  ): Promise<void> {
    const name = recordName(kind, token);
    for (let attempt = 0; attempt < REGISTRATION_ATTEMPTS; attempt++) {
      const found = await this.read<T>(name);
      if (found) options.check?.(found.record);
      try {
        if (!found) await this.createRecord(kind, name, record, { labels: options.labels ?? {}, mutable: true });
        else
          await this.client.request('PUT', resourcePath(SECRETS, this.namespace, name), {
            query: { fieldManager: CONTROLLER_MANAGER },
            body: { ...found.object, data: { [RECORD_KEY]: encode(record) } },
          });
        return;
      } catch (err) {
        // Lost a race with another writer (created, changed or deleted meanwhile): read again.
        if (!isConflict(err) && !isNotFound(err)) throw storeError(err);
      }
    }
    throw new SvcError('store_unavailable', `share ${token}: the ${kind} record kept changing; try again`, {
      status: 503,
    });
  }

  /**
   * Creates the immutable Secret holding one record, owned by `owner` (so deleting an account or
   * environment removes what hangs off it); a name already taken throws `exists()` when given.
   */
  private async createRecord(
    kind: Kind,
    name: string,
    record: object,
    options: { labels?: Record<string, string>; owner?: KubeObject; exists?: () => SvcError; mutable?: boolean } = {},
  ): Promise<KubeObject> {
    const { labels, owner, exists } = options;
    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: this.namespace,
        labels: { [MANAGED_BY_LABEL]: CONTROLLER_MANAGER, [RECORD_LABEL]: kind, ...labels },
        ...(owner?.metadata.uid
          ? {
              ownerReferences: [
                { apiVersion: 'v1', kind: 'Secret', name: owner.metadata.name, uid: owner.metadata.uid },
              ],
            }
          : {}),
      },
      type: 'Opaque',
      ...(options.mutable ? {} : { immutable: true }),
      data: { [RECORD_KEY]: encode(record) },
    };
    try {
      return (await this.client.request('POST', resourcePath(SECRETS, this.namespace), {
        query: { fieldManager: CONTROLLER_MANAGER },
        body: secret,
      })) as KubeObject;
    } catch (err) {
      if (exists && isConflict(err)) throw exists();
      throw err;
    }
  }

  private async read<T>(name: string): Promise<Stored<T> | undefined> {
    let object: KubeObject;
    try {
      object = await this.client.get(resourcePath(SECRETS, this.namespace, name));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw storeError(err);
    }
    return decode<T>(object);
  }

  private async list<T>(kind: Kind, selector?: string): Promise<Stored<T>[]> {
    const out: Stored<T>[] = [];
    let next: string | undefined;
    do {
      const page = await this.client
        .list(resourcePath(SECRETS, this.namespace), {
          labelSelector: [`${MANAGED_BY_LABEL}=${CONTROLLER_MANAGER}`, `${RECORD_LABEL}=${kind}`, selector]
            .filter(Boolean)
            .join(','),
          limit: 500,
          continue: next,
        })
        .catch((err: unknown) => {
          throw storeError(err);
        });
      for (const item of page.items) {
        const decoded = decode<T>(item);
        if (decoded) out.push(decoded);
      }
      next = page.metadata.continue || undefined;
    } while (next);
    return out;
  }

  /** Deletes exactly this version's object (uid precondition); false when it was already gone. */
  private async deleteObject(object: KubeObject): Promise<boolean> {
    try {
      await this.client.request('DELETE', resourcePath(SECRETS, this.namespace, object.metadata.name), {
        body: { preconditions: { uid: object.metadata.uid }, propagationPolicy: 'Background' },
      });
      return true;
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return false;
      throw storeError(err);
    }
  }
}

function encode(record: object): string {
  return Buffer.from(JSON.stringify(record), 'utf8').toString('base64');
}

function decode<T>(object: KubeObject): Stored<T> | undefined {
  const data = (object.data ?? {}) as Record<string, string>;
  const encoded = data[RECORD_KEY];
  if (encoded === undefined) return undefined;
  try {
    return { record: JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as T, object };
  } catch {
    throw new SvcError('store_corrupt', `Secret ${object.metadata.name} does not hold a controller record`);
  }
}

function conflict(message: string): SvcError {
  return new SvcError('conflict', message, { status: 409 });
}

/** API-server failures surface as `store_unavailable` (503): the request may be retried. */
function storeError(err: unknown): unknown {
  if (isNotFound(err)) return err;
  if (err instanceof KubeApiError) {
    return new SvcError('store_unavailable', `controller store: ${err.message}`, { status: 503, cause: err });
  }
  return err;
}
