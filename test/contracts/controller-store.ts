import { describe, expect, it } from 'vitest';
import type { RegistrationRecord, RegistrationStore } from '../../controller/registration-store.ts';
import type { AccountRecord, ControllerStore, EnrollmentRecord, EnvironmentRecord } from '../../controller/store.ts';

/** Every controller store also keeps the share registry's records. */
type Store = ControllerStore & RegistrationStore;

/** A store under test, and a second store opened over the same backing state (durability). */
export interface StoreUnderTest {
  readonly store: Store;
  readonly reopen: () => Promise<Store>;
}

/**
 * The behaviour every ControllerStore must show (oauth2-proxy's RunSessionStoreTests style): the
 * embedded file store runs it in controller/file-store.test.ts, and a Kubernetes-backed store runs
 * the same suite against a real API server. `makeStore` must return a fresh, empty store each call.
 */
export function runStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  const now = '2025-01-01T00:00:00.000Z';
  const account = (id: string, email = `${id}@example.com`): AccountRecord => ({
    id,
    email,
    tokenHash: 'a'.repeat(64),
    createdAt: now,
  });
  const environment = (envZId: string, accountId: string): EnvironmentRecord => ({
    envZId,
    accountId,
    description: 'laptop',
    host: 'host-1',
    createdAt: now,
  });
  const enrollment = (id: string, envZId: string): EnrollmentRecord => ({
    id,
    envZId,
    tokenHash: 'b'.repeat(64),
    controllerZId: 'ctlaaaaaaaaaaaaaaaa',
    createdAt: now,
  });

  describe(`ControllerStore contract: ${name}`, () => {
    it('creates and reads accounts with every field; unknown ids are undefined', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('acctaaaaaaaa', 'Alice@Example.com'));
      expect(await store.getAccount('acctaaaaaaaa')).toEqual(account('acctaaaaaaaa', 'Alice@Example.com'));
      expect(await store.getAccount('missingmissi')).toBeUndefined();
      expect((await store.findAccountByEmail('alice@example.COM'))?.id).toBe('acctaaaaaaaa');
      expect(await store.findAccountByEmail('bob@example.com')).toBeUndefined();
    });

    it('refuses a second account with the same id or email (case-insensitive)', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('acctbbbbbbbb', 'bob@example.com'));
      await expect(store.createAccount(account('acctcccccccc', 'BOB@example.com'))).rejects.toMatchObject({
        code: 'conflict',
        status: 409,
      });
      await expect(store.createAccount(account('acctbbbbbbbb', 'other@example.com'))).rejects.toMatchObject({
        code: 'conflict',
      });
      expect(await store.getAccount('acctcccccccc')).toBeUndefined();
    });

    it('keeps environments per account and refuses one for an unknown account or a duplicate envZId', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('acctdddddddd'));
      await store.createAccount(account('accteeeeeeee'));
      await store.createEnvironment(environment('envaaaaaaaaa', 'acctdddddddd'));
      await store.createEnvironment(environment('envbbbbbbbbb', 'acctdddddddd'));
      await store.createEnvironment(environment('envccccccccc', 'accteeeeeeee'));
      expect(await store.getEnvironment('envaaaaaaaaa')).toEqual(environment('envaaaaaaaaa', 'acctdddddddd'));
      expect(await store.getEnvironment('envmissingxx')).toBeUndefined();
      expect((await store.listEnvironments('acctdddddddd')).map((e) => e.envZId).sort()).toEqual([
        'envaaaaaaaaa',
        'envbbbbbbbbb',
      ]);
      expect(await store.listEnvironments('acctnobodyxx')).toEqual([]);
      expect((await store.listAccounts()).map((a) => a.id).sort()).toEqual(['acctdddddddd', 'accteeeeeeee']);
      await expect(store.createEnvironment(environment('envddddddddd', 'acctnobodyxx'))).rejects.toMatchObject({
        code: 'not_found',
      });
      await expect(store.createEnvironment(environment('envaaaaaaaaa', 'accteeeeeeee'))).rejects.toMatchObject({
        code: 'conflict',
      });
      expect((await store.getEnvironment('envaaaaaaaaa'))?.accountId).toBe('acctdddddddd');
    });

    it('enrolls an environment once, finds the enrollment by id and by environment, and unenrolls', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('acctffffffff'));
      await store.createEnvironment(environment('enveeeeeeeee', 'acctffffffff'));
      await store.createEnrollment(enrollment('enraaaaaaaaa', 'enveeeeeeeee'));
      expect(await store.getEnrollment('enraaaaaaaaa')).toEqual(enrollment('enraaaaaaaaa', 'enveeeeeeeee'));
      expect((await store.getEnrollmentByEnvironment('enveeeeeeeee'))?.id).toBe('enraaaaaaaaa');
      await expect(store.createEnrollment(enrollment('enrbbbbbbbbb', 'enveeeeeeeee'))).rejects.toMatchObject({
        code: 'conflict',
      });
      await expect(store.createEnrollment(enrollment('enrcccccccccc', 'envmissingxx'))).rejects.toMatchObject({
        code: 'not_found',
      });
      expect(await store.deleteEnrollment('enraaaaaaaaa')).toBe(true);
      expect(await store.deleteEnrollment('enraaaaaaaaa')).toBe(false);
      expect(await store.getEnrollment('enraaaaaaaaa')).toBeUndefined();
      expect(await store.getEnrollmentByEnvironment('enveeeeeeeee')).toBeUndefined();
      await store.createEnrollment(enrollment('enrdddddddd', 'enveeeeeeeee'));
      expect((await store.getEnrollmentByEnvironment('enveeeeeeeee'))?.id).toBe('enrdddddddd');
    });

    it('deleting an environment removes its enrollment', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('acctgggggggg'));
      await store.createEnvironment(environment('envfffffffff', 'acctgggggggg'));
      await store.createEnrollment(enrollment('enreeeeeeeee', 'envfffffffff'));
      expect(await store.deleteEnvironment('envfffffffff')).toBe(true);
      expect(await store.deleteEnvironment('envfffffffff')).toBe(false);
      expect(await store.getEnvironment('envfffffffff')).toBeUndefined();
      expect(await store.getEnrollment('enreeeeeeeee')).toBeUndefined();
    });

    it('returned records are copies: changing one does not change the store', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('accthhhhhhhh'));
      const got = (await store.getAccount('accthhhhhhhh')) as { email: string };
      got.email = 'changed@example.com';
      expect((await store.getAccount('accthhhhhhhh'))?.email).toBe('accthhhhhhhh@example.com');
    });

    it('concurrent changes are all kept', async () => {
      const { store } = await makeStore();
      await store.createAccount(account('acctiiiiiiii'));
      const ids = Array.from({ length: 20 }, (_, i) => `envconc${String(i).padStart(5, '0')}`);
      await Promise.all(ids.map((id) => store.createEnvironment(environment(id, 'acctiiiiiiii'))));
      expect((await store.listEnvironments('acctiiiiiiii')).length).toBe(20);
    });

    it('is durable: a store reopened over the same state sees every change, and changes by either are seen by both', async () => {
      const { store, reopen } = await makeStore();
      await store.createAccount(account('acctjjjjjjjj'));
      await store.createEnvironment(environment('envggggggggg', 'acctjjjjjjjj'));
      await store.createEnrollment(enrollment('enrffffffff', 'envggggggggg'));
      const second = await reopen();
      expect(await second.getAccount('acctjjjjjjjj')).toEqual(account('acctjjjjjjjj'));
      expect((await second.getEnrollmentByEnvironment('envggggggggg'))?.id).toBe('enrffffffff');
      await second.createAccount(account('acctkkkkkkkk'));
      expect((await store.getAccount('acctkkkkkkkk'))?.id).toBe('acctkkkkkkkk');
      await store.deleteEnrollment('enrffffffff');
      expect(await second.getEnrollment('enrffffffff')).toBeUndefined();
      await second.close();
    });
  });

  const registration = (
    token: string,
    envZId: string,
    extra: Partial<RegistrationRecord> = {},
  ): RegistrationRecord => ({
    token,
    instance: `instance-of-${token}`,
    envZId,
    accountId: 'acctregaaaaa',
    shareMode: 'public',
    backendMode: 'proxy',
    createdAt: now,
    ...extra,
  });
  const tokensOf = async (store: Store) => (await store.listRegistrations()).map((r) => r.token).sort();

  describe(`RegistrationStore contract: ${name}`, () => {
    it('keeps registrations with every field and replaces one of the same environment', async () => {
      const { store } = await makeStore();
      expect(await store.listRegistrations()).toEqual([]);
      const oauth = { provider: 'corp', emailAddressPatterns: ['*@example.com'], checkInterval: '3h' };
      await store.putRegistration(registration('tokena', 'envregaaaaaa', { oauth }));
      await store.putRegistration(registration('tokenb', 'envregaaaaaa', { shareMode: 'private' }));
      expect(await store.listRegistrations()).toEqual(
        expect.arrayContaining([
          registration('tokena', 'envregaaaaaa', { oauth }),
          registration('tokenb', 'envregaaaaaa', { shareMode: 'private' }),
        ]),
      );
      await store.putRegistration(registration('tokena', 'envregaaaaaa', { backendMode: 'web' }));
      const replaced = (await store.listRegistrations()).find((r) => r.token === 'tokena');
      expect(replaced).toEqual(registration('tokena', 'envregaaaaaa', { backendMode: 'web' }));
      expect(await tokensOf(store)).toEqual(['tokena', 'tokenb']);
    });

    it("refuses another environment's token with share_token_taken (409) and keeps the owner's record", async () => {
      const { store } = await makeStore();
      await store.putRegistration(registration('owned', 'envregowner1'));
      await expect(store.putRegistration(registration('owned', 'envregthief1'))).rejects.toMatchObject({
        code: 'share_token_taken',
        status: 409,
      });
      expect(await store.listRegistrations()).toEqual([registration('owned', 'envregowner1')]);
    });

    it('of two environments claiming one token at once, exactly one wins', async () => {
      const { store } = await makeStore();
      const claims = await Promise.allSettled([
        store.putRegistration(registration('raced', 'envregracer1')),
        store.putRegistration(registration('raced', 'envregracer2')),
      ]);
      expect(claims.filter((c) => c.status === 'fulfilled')).toHaveLength(1);
      const refused = claims.find((c) => c.status === 'rejected');
      expect(refused?.reason).toMatchObject({ code: 'share_token_taken' });
      const [winner] = await store.listRegistrations();
      expect(['envregracer1', 'envregracer2']).toContain(winner?.envZId);
    });

    it('removes a token only for its owner, and every token of an environment at once', async () => {
      const { store } = await makeStore();
      await store.putRegistration(registration('one', 'envregdelaaa'));
      await store.putRegistration(registration('two', 'envregdelaaa'));
      await store.putRegistration(registration('three', 'envregdelbbb'));
      expect(await store.deleteRegistration('one', 'envregdelbbb')).toBe(false);
      expect(await store.deleteRegistration('missing', 'envregdelaaa')).toBe(false);
      expect(await store.deleteRegistration('one', 'envregdelaaa')).toBe(true);
      expect(await store.deleteRegistration('one', 'envregdelaaa')).toBe(false);
      await store.putRegistration(registration('four', 'envregdelaaa'));
      expect((await store.deleteRegistrationsOf('envregdelaaa')).sort()).toEqual(['four', 'two']);
      expect(await store.deleteRegistrationsOf('envregdelaaa')).toEqual([]);
      expect(await tokensOf(store)).toEqual(['three']);
      // A removed token can be claimed by another environment.
      await store.putRegistration(registration('two', 'envregdelbbb'));
      expect(await tokensOf(store)).toEqual(['three', 'two']);
    });

    it('is durable: a reopened store sees the registrations and their owners', async () => {
      const { store, reopen } = await makeStore();
      await store.putRegistration(registration('kept', 'envregduraaa'));
      const second = await reopen();
      expect(await second.listRegistrations()).toEqual([registration('kept', 'envregduraaa')]);
      await expect(second.putRegistration(registration('kept', 'envregdurbbb'))).rejects.toMatchObject({
        code: 'share_token_taken',
      });
      await second.close();
    });

    it('keeps token reservations (quarantine of freed tokens): replaced per token, removed, durable', async () => {
      const { store, reopen } = await makeStore();
      const reservation = (token: string, accountId: string, until = '2030-01-01T00:00:00.000Z') => ({
        token,
        accountId,
        until,
      });
      const byToken = async (s: Store) => (await s.listReservations()).sort((a, b) => a.token.localeCompare(b.token));
      expect(await store.listReservations()).toEqual([]);
      await store.putReservation(reservation('freed1', 'acctresaaaaa'));
      await store.putReservation(reservation('freed2', 'acctresaaaaa'));
      await store.putReservation(reservation('freed1', 'acctresbbbbb', '2031-01-01T00:00:00.000Z'));
      expect(await byToken(store)).toEqual([
        reservation('freed1', 'acctresbbbbb', '2031-01-01T00:00:00.000Z'),
        reservation('freed2', 'acctresaaaaa'),
      ]);
      // Reservations and registrations of one token are separate records.
      await store.putRegistration(registration('freed2', 'envresaaaaaa'));
      expect(await store.deleteReservation('freed2')).toBe(true);
      expect(await store.deleteReservation('freed2')).toBe(false);
      expect(await store.deleteReservation('missing')).toBe(false);
      expect(await tokensOf(store)).toEqual(['freed2']);
      const second = await reopen();
      expect(await byToken(second)).toEqual([reservation('freed1', 'acctresbbbbb', '2031-01-01T00:00:00.000Z')]);
      await second.close();
    });
  });
}
