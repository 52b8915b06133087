/**
 * The auth endpoint's shares at scale, on a real API server: the operator's auth-config reconciler
 * (its real client, Event recorder and Share validation) given 4,000 OAuth Shares, more than one
 * Secret holds, writes them over its 16 shard Secrets, and the auth endpoint's config loader reads
 * every one of them back from the files as the chart mounts them. A shard past the API server's
 * 1 MiB limit keeps its oldest shares, and the ones left out are announced. The Shares themselves
 * are handed to the reconciler as its informer would (creating 4,000 and their children would
 * take the test minutes and say nothing more about the auth config).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadFrontendConfig } from '../../lib/config/frontend.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import type { Share } from '../../lib/kube/resources.ts';
import { createLogger } from '../../lib/logger.ts';
import type { AuthConfigReconcilerDeps } from '../../operator/auth-config-reconciler.ts';
import {
  AUTH_SHARDS,
  MAX_SECRET_BYTES,
  SHARD_KEY,
  shardKey,
  shardOf,
  shardSecretName,
} from '../../operator/auth-shards.ts';
import type { ControlPlane } from './envtest.ts';
import { AUTH_SECRET, authShardSecrets, mountAuthConfig } from './auth-config-files.ts';
import { BIG_PATTERNS, authReconcilerFor, oauthShare } from './auth-share-fixture.ts';
import {
  RELEASE_NS,
  SECRET_VALUES,
  api,
  decodeSecret,
  eventually,
  startCluster,
  type Obj,
} from './operator-fixture.ts';

const SHARES = 4000;
const NAMESPACES = 30;
/** The shard choice's key for the test installation's signing key. */
const KEY = shardKey(SECRET_VALUES.signingKey);

let cp: ControlPlane;
let client: KubeClient;
/** The API writes (server-side applies) the client made. */
let writes = 0;
let work: string;
const logs: string[] = [];
const logger = createLogger('svc-operator', {
  level: 'debug',
  destination: new Writable({
    write: (chunk: Buffer, _e, done) => {
      logs.push(chunk.toString('utf8'));
      done();
    },
  }),
});

const share = oauthShare;
const reconcilerFor = (shares: Share[], extra: Partial<AuthConfigReconcilerDeps> = {}) =>
  authReconcilerFor(client, logger, shares, extra);

const versions = async (): Promise<Map<string, string | undefined>> =>
  new Map(
    [...(await authShardSecrets(cp))].map(([name, s]) => [
      name,
      (s.metadata as { resourceVersion?: string }).resourceVersion,
    ]),
  );

beforeAll(async () => {
  cp = await startCluster();
  client = await KubeClient.create(cp.kubeConfig, (verb) => {
    if (verb === 'PATCH') writes++;
  });
  work = await mkdtemp(join(tmpdir(), 'svc-auth-shards-'));
  for (let i = 0; i < NAMESPACES; i++)
    await api(cp, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: `team-${i}` } } });
}, 120_000);
afterAll(async () => {
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the auth endpoint’s shares on a real API server', () => {
  const patterns = ['*@engineering.example.com', '*@support.example.com', 'someone.outside@partner.example.org'];
  const shares = Array.from({ length: SHARES }, (_, i) => share(`team-${i % NAMESPACES}`, `app-${i}`, i, patterns));

  it(`spreads ${SHARES} OAuth shares over 16 Secrets, and the auth endpoint loads every one`, async () => {
    const { reconciler, listed } = reconcilerFor([...shares]);
    await reconciler.reconcile();
    expect(writes).toBe(AUTH_SHARDS + 1);
    const shards = await authShardSecrets(cp);
    expect(shards.size).toBe(AUTH_SHARDS);
    const sizes = [...shards.values()].map((s) => decodeSecret(s, SHARD_KEY).length);
    const total = sizes.reduce((a, b) => a + b, 0);
    // More than one Secret may hold: the single config Secret the operator wrote before is refused.
    expect(total).toBeGreaterThan(MAX_SECRET_BYTES);
    await expect(applyOneSecret('one-secret', total)).rejects.toThrow(/1048576/);
    for (const s of shards.values()) {
      expect(s.type).toBe('Opaque');
      expect(s.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'svc-operator' });
    }
    // Each share in the shard its namespace/name picks, several shards used.
    const counts = new Map<number, number>();
    for (const sh of shares) {
      const n = shardOf(sh.metadata.namespace as string, sh.metadata.name, KEY);
      counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    expect(counts.size).toBe(AUTH_SHARDS);
    const shard3 = decodeSecret(shards.get(shardSecretName(AUTH_SECRET, 3)), SHARD_KEY);
    expect((JSON.parse(shard3) as unknown[]).length).toBe(counts.get(3));

    const file = await mountAuthConfig(cp, work);
    const config = loadFrontendConfig(file);
    expect(config.shares.length).toBe(SHARES);
    expect(new Set(config.shares.map((s) => s.token))).toEqual(new Set(shares.map((s) => s.spec?.token)));
    const first = config.shares.find((s) => s.token === 'team-0-app-0');
    expect(first?.target).toEqual(new URL('http://svc-share-app-0.team-0.svc:80'));
    console.log(
      `auth shards: ${SHARES} shares, ${total} bytes (${(total / SHARES).toFixed(0)} per entry), ` +
        `shard sizes ${Math.min(...sizes)}–${Math.max(...sizes)} bytes`,
    );

    // Unchanged: nothing written. One share gone: only its shard is.
    const before = await versions();
    writes = 0;
    await reconciler.reconcile();
    expect(writes).toBe(0);
    const gone = shares[7] as Share;
    listed.items = shares.filter((s) => s !== gone);
    await reconciler.reconcile();
    expect(writes).toBe(1);
    const after = await versions();
    const changed = [...after].filter(([name, rv]) => before.get(name) !== rv).map(([name]) => name);
    expect(changed).toEqual([shardSecretName(AUTH_SECRET, shardOf(gone.metadata.namespace as string, 'app-7', KEY))]);
  }, 120_000);

  it('stores a Secret of exactly 1 MiB and refuses one byte more (the limit a shard is cut at)', async () => {
    await expect(applyOneSecret('at-limit', MAX_SECRET_BYTES)).resolves.toBeDefined();
    await expect(applyOneSecret('past-limit', MAX_SECRET_BYTES + 1)).rejects.toThrow(/1048576/);
  });

  it('keeps a full shard’s oldest shares of one namespace and announces the ones left out', async () => {
    // About 20 KB an entry, 60 of them in one shard; no quota stops the namespace first.
    const big = BIG_PATTERNS;
    const inShard0: Share[] = [];
    for (let i = 0; inShard0.length < 60; i++) {
      if (shardOf('team-1', `big-${i}`, KEY) === 0) inShard0.push(share('team-1', `big-${i}`, SHARES + i, big));
    }
    await reconcilerFor(inShard0, { quotaBytes: AUTH_SHARDS * MAX_SECRET_BYTES }).reconciler.reconcile();
    const shard = (await authShardSecrets(cp)).get(shardSecretName(AUTH_SECRET, 0));
    const text = decodeSecret(shard, SHARD_KEY);
    const kept = (JSON.parse(text) as { token: string }[]).map((e) => e.token);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_SECRET_BYTES);
    expect(kept.length).toBeGreaterThan(40);
    expect(kept.length).toBeLessThan(60);
    const oldest = inShard0.slice(0, kept.length).map((s) => s.spec?.token);
    expect([...kept].sort()).toEqual([...oldest].sort());
    const left = inShard0.slice(kept.length);
    expect(logs.join('')).toContain('auth endpoint shard full');
    const events = await eventually(async () => {
      const list = (await api(cp, '/api/v1/namespaces/team-1/events')) as unknown as {
        items: { reason: string; type: string; involvedObject: { name: string }; message: string }[];
      };
      const full = list.items.filter((e) => e.reason === 'AuthShardFull');
      return full.length === left.length ? full : undefined;
    }, 'a Warning Event on each Share left out');
    expect(events.map((e) => e.involvedObject.name).sort()).toEqual(left.map((s) => s.metadata.name).sort());
    expect(events.every((e) => e.type === 'Warning' && e.message.includes(shardSecretName(AUTH_SECRET, 0)))).toBe(true);
  }, 60_000);
});

/** Applies an Opaque Secret whose one value is `bytes` long, as the operator applies its Secrets. */
async function applyOneSecret(name: string, bytes: number): Promise<Obj> {
  return await client.apply(`/api/v1/namespaces/${RELEASE_NS}/secrets/${name}`, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: RELEASE_NS, labels: { 'app.kubernetes.io/managed-by': 'svc-operator' } },
    type: 'Opaque',
    data: { [SHARD_KEY]: Buffer.alloc(bytes, 'a').toString('base64') },
  });
}
