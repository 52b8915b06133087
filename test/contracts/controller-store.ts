import { describe, expect, it } from 'vitest';
import type { AccountRecord, ControllerStore, EnrollmentRecord, EnvironmentRecord } from '../../controller/store.ts';

/** A store under test, and a second store opened over the same backing state (durability). */
export interface StoreUnderTest {
  readonly store: ControllerStore;
  readonly reopen: () => Promise<ControllerStore>;
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
}
