/**
 * The operator's auth-share rules on a real API server, watching one tenant namespace (`team-a`)
 * while the auth endpoint's Secrets live in the release namespace: a Share past its namespace's
 * quota of the auth endpoint's share list is Ready=False and left out of the list (never another
 * namespace's share), and fits again when older ones go; tokens of the installation's own hosts are
 * refused; a deleted shard Secret is written again although its namespace is not watched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shardSecretName } from '../../operator/auth-shards.ts';
import { AUTH_SECRET, authShareEntries } from './auth-config-files.ts';
import { BIG_PATTERNS } from './auth-share-fixture.ts';
import type { ControlPlane } from './envtest.ts';
import {
  DOMAIN,
  RELEASE_NS,
  api,
  condition,
  eventually,
  getOrNone,
  paths,
  startCluster,
  startTestOperator,
  type Obj,
  type TestOperator,
} from './operator-fixture.ts';

const TEAM = 'team-a';
/** The least quota: one share with 64 long email patterns (about 20 KB) fits, two do not. */
const QUOTA = 32 * 1024;

let cp: ControlPlane;
let operator: TestOperator;

beforeAll(async () => {
  cp = await startCluster();
  await api(cp, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: TEAM } } });
  operator = await startTestOperator(cp, {
    namespace: TEAM,
    authShareQuotaBytes: QUOTA,
    reservedHosts: [`api.${DOMAIN}`],
  });
}, 180_000);
afterAll(async () => {
  await operator?.close();
  await cp?.stop();
});

async function createShare(name: string, spec: Record<string, unknown>): Promise<Obj> {
  return await api(cp, paths.shares(TEAM), {
    method: 'POST',
    body: { apiVersion: 'svc.dev/v1alpha1', kind: 'Share', metadata: { name, namespace: TEAM }, spec },
  });
}

const bigShare = (token: string): Record<string, unknown> => ({
  backendMode: 'proxy',
  target: 'http://app.team-a.svc:8080',
  token,
  oauth: { provider: 'dev', emailAddressPatterns: BIG_PATTERNS },
});

/** The Share's Ready condition once `accept` says it is the expected one. */
async function readyWhen(
  name: string,
  accept: (ready: ReturnType<typeof condition>) => boolean,
  what: string,
): Promise<NonNullable<ReturnType<typeof condition>>> {
  return await eventually(async () => {
    const ready = condition(await getOrNone(cp, paths.share(name, TEAM)), 'Ready');
    return ready && accept(ready) ? ready : undefined;
  }, what);
}

describe('operator: OAuth shares against the auth endpoint’s share list', () => {
  it('writes a deleted shard Secret again although its namespace is not watched', async () => {
    const name = shardSecretName(AUTH_SECRET, 0);
    const first = await eventually(() => getOrNone(cp, paths.secret(name, RELEASE_NS)), 'the shard Secret');
    await api(cp, paths.secret(name, RELEASE_NS), { method: 'DELETE' });
    const again = await eventually(async () => {
      const s = await getOrNone(cp, paths.secret(name, RELEASE_NS));
      return s && s.metadata.uid !== first.metadata.uid ? s : undefined;
    }, 'the deleted shard Secret written again');
    expect(again.metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'auth-shares' });
  });

  it('leaves a Share past its namespace’s quota out, Ready=False with a Warning, until older ones go', async () => {
    await createShare('big-1', bigShare('big-one'));
    await eventually(
      async () => (await authShareEntries(cp)).some((e) => e.token === 'big-one'),
      'the first share in the list',
    );
    await createShare('big-2', bigShare('big-two'));
    const over = await readyWhen('big-2', (r) => r?.reason === 'AuthQuotaExceeded', 'big-2 over the quota');
    expect(over.status).toBe('False');
    expect(over.message).toContain(`quota of ${QUOTA} bytes`);
    expect(over.message).toContain(`namespace ${TEAM}`);
    expect((await authShareEntries(cp)).map((e) => e.token)).not.toContain('big-two');
    await eventually(async () => {
      const events = (await api(cp, paths.events(TEAM))) as unknown as {
        items: { reason: string; type: string; involvedObject: { name: string } }[];
      };
      return events.items.some(
        (e) => e.reason === 'AuthQuotaExceeded' && e.type === 'Warning' && e.involvedObject.name === 'big-2',
      );
    }, 'a Warning Event AuthQuotaExceeded on big-2');
    // The older share keeps its place; it goes, and the newer one fits.
    expect(condition(await getOrNone(cp, paths.share('big-1', TEAM)), 'Ready')?.reason).not.toBe('AuthQuotaExceeded');
    await api(cp, paths.share('big-1', TEAM), { method: 'DELETE' });
    await readyWhen('big-2', (r) => r?.reason !== 'AuthQuotaExceeded', 'big-2 within the quota');
    await eventually(
      async () => (await authShareEntries(cp)).some((e) => e.token === 'big-two'),
      'the newer share in the list',
    );
  });

  it('refuses tokens of the installation’s own hosts, and makes no Ingress for them', async () => {
    for (const [name, token] of [
      ['takes-auth', 'auth'],
      ['takes-api', 'api'],
    ] as const) {
      await createShare(name, { backendMode: 'proxy', target: 'http://app.team-a.svc:8080', token });
      const refused = await readyWhen(name, (r) => r?.reason === 'InvalidSpec', `${name} refused`);
      expect(refused.message).toContain(`${token}.${DOMAIN} is a host of the installation itself`);
      expect(await getOrNone(cp, paths.ingress(`svc-share-${name}`, TEAM))).toBeUndefined();
    }
  });
});
