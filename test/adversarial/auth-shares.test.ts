/**
 * One tenant against the others' OAuth shares, on a real API server: the auth endpoint's share list
 * (16 shard Secrets of at most 1 MiB) is shared by every namespace, so a namespace that fills it
 * from its own Shares must never push out another namespace's; tokens that name the installation's
 * own hosts are refused; and edits to shares spread over every shard do not turn into Secret
 * rewrites as fast as they come. The auth-config reconciler runs with its real client, Event
 * recorder and Share validation; its Shares are handed to it as its informer would.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../lib/kube/client.ts';
import type { Share } from '../../lib/kube/resources.ts';
import { createLogger } from '../../lib/logger.ts';
import { AUTH_CONFIG_KEY, AUTH_WRITE_BYTES_PER_SECOND } from '../../operator/auth-config-reconciler.ts';
import { DEFAULT_AUTH_SHARE_QUOTA_BYTES } from '../../operator/auth-quota.ts';
import { Controller } from '../../operator/controller.ts';
import { parseInstallation } from '../../operator/frontend-secret.ts';
import { OperatorMetrics } from '../../operator/metrics.ts';
import { ShareMemo } from '../../operator/share-memo.ts';
import { wireWatches } from '../../operator/watches.ts';
import { authShareEntries } from '../k8s/auth-config-files.ts';
import { BIG_PATTERNS, Listed, authReconcilerFor, oauthShare } from '../k8s/auth-share-fixture.ts';
import type { ControlPlane } from '../k8s/envtest.ts';
import { DOMAIN, api, oauthSection, startCluster } from '../k8s/operator-fixture.ts';
import { suiteFigures } from '../support/figures.ts';

const figures = suiteFigures('auth-shares');
const classes = {
  flood: figures.attackClass(
    "one namespace fills the auth endpoint's share list to push out another namespace's OAuth share",
    'per-namespace quota of the share list (operator/auth-quota.ts)',
  ),
  crowd: figures.attackClass(
    "many namespaces at their quota overfill the list to push out a small namespace's OAuth share",
    'a full shard drops the newest share of the namespace using the most (operator/auth-shards.ts)',
  ),
  host: figures.attackClass(
    "a Share's token takes a host of the installation (auth endpoint, public frontend, API)",
    'reserved tokens in the Share validation (lib/share/reserved-tokens.ts)',
  ),
};

let cp: ControlPlane;
let client: KubeClient;
const quiet = createLogger('svc-operator', {
  level: 'warn',
  destination: new Writable({ write: (_c: Buffer, _e, done) => done() }),
});

beforeAll(async () => {
  cp = await startCluster();
  client = await KubeClient.create(cp.kubeConfig);
  const names = ['victim', 'flood', ...Array.from({ length: 40 }, (_, i) => `crowd-${i}`)];
  for (const name of names) await api(cp, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name } } });
}, 120_000);
afterAll(async () => {
  figures.write();
  await cp?.stop();
});

describe("a tenant against the auth endpoint's share list", () => {
  it("one namespace's flood leaves a later share of another namespace in the list", async () => {
    // 1,200 Shares of about 20 KB: half as much again as all 16 shards hold (16 MiB), from one
    // namespace; then the victim's, as large (a small one would fit in what a full shard has left).
    const flood = Array.from({ length: 1200 }, (_, i) => oauthShare('flood', `f${i}`, i, BIG_PATTERNS));
    const victim = oauthShare('victim', 'app', 10_000, BIG_PATTERNS);
    await authReconcilerFor(client, quiet, [...flood, victim]).reconciler.reconcile();
    const entries = await authShareEntries(cp);
    await classes.flood.run(() => expect(entries.map((e) => e.token)).toContain('victim-app'));
    const kept = entries.filter((e) => e.token.startsWith('flood-'));
    // The flood keeps its oldest shares up to its quota, no more.
    expect(kept.length).toBeGreaterThan(0);
    const floodBytes = kept.reduce((n, e) => n + JSON.stringify(e).length + 2, 0);
    expect(floodBytes).toBeLessThanOrEqual(DEFAULT_AUTH_SHARE_QUOTA_BYTES);
    expect(kept.map((e) => e.token).sort()).toEqual(
      flood
        .slice(0, kept.length)
        .map((s) => s.spec?.token)
        .sort(),
    );
    figures.measure('flood namespace: OAuth shares of ~20 KB routed, of 1,200', kept.length);
  }, 120_000);

  it('namespaces at their quota overfilling the list lose their own newest shares first', async () => {
    // 40 namespaces × 26 shares of ~20 KB: each at its quota, about 20 MiB in all.
    const crowd = Array.from({ length: 40 * 26 }, (_, i) => oauthShare(`crowd-${i % 40}`, `c${i}`, i, BIG_PATTERNS));
    const victim = oauthShare('victim', 'app', 10_000, BIG_PATTERNS);
    await authReconcilerFor(client, quiet, [...crowd, victim]).reconciler.reconcile();
    const tokens = new Set((await authShareEntries(cp)).map((e) => e.token));
    await classes.crowd.run(() => expect(tokens.has('victim-app')).toBe(true));
    const routed = new Map<string, number>();
    for (const s of crowd)
      if (tokens.has(s.spec?.token ?? ''))
        routed.set(s.metadata.namespace ?? '', (routed.get(s.metadata.namespace ?? '') ?? 0) + 1);
    const counts = [...routed.values()];
    // Every crowd namespace keeps some shares: the loss is spread, none is pushed out whole.
    expect(routed.size).toBe(40);
    figures.measure(
      'crowd of 40 namespaces: OAuth shares routed per namespace, fewest–most',
      `${Math.min(...counts)}–${Math.max(...counts)}`,
    );
  }, 120_000);

  it("refuses Share tokens that name the installation's own hosts under the share domain", async () => {
    const installation = parseInstallation({
      'oauth.yaml': Buffer.from(JSON.stringify({ oauth: oauthSection() })).toString('base64'),
    });
    const memo = new ShareMemo(new Listed<Share>(), { domain: DOMAIN, hosts: [`api.${DOMAIN}`, `share.${DOMAIN}`] });
    // auth: the auth endpoint's host (endpoint_url); api and share: hosts the chart passes.
    for (const token of ['auth', 'api', 'share']) {
      const share = oauthShare('victim', `t-${token}`, 0);
      share.spec = { ...share.spec, token };
      const result = memo.validate(share, installation.ok ? installation.value : undefined);
      await classes.host.run(() => {
        expect(result.ok).toBe(false);
        if (!result.ok)
          expect(result.problems[0]?.message).toContain(`${token}.${DOMAIN} is a host of the installation`);
      });
    }
    const other = oauthShare('victim', 'fine', 0);
    other.spec = { ...other.spec, token: 'authx' };
    expect(memo.validate(other, installation.ok ? installation.value : undefined).ok).toBe(true);
  });
});

describe('a pattern-edit storm over every shard', () => {
  /** A reconcile that wrote: when it started and ended, and the bytes it wrote. */
  interface Burst {
    readonly start: number;
    readonly end: number;
    readonly bytes: number;
  }

  /**
   * Edits email patterns of shares in 16 namespaces every 250 ms for `ms`, through the real work
   * queue and watches; returns the Secret writes, bytes written and each reconcile that wrote.
   */
  async function storm(
    rate: number,
    ms: number,
  ): Promise<{ writes: number; bytes: number; seconds: number; bursts: Burst[] }> {
    let writes = 0;
    let bytes = 0;
    const counting = Object.create(client) as KubeClient;
    counting.apply = async (path, object) => {
      writes++;
      const data = (object as { data?: Record<string, string> }).data ?? {};
      for (const v of Object.values(data)) bytes += Buffer.from(v, 'base64').length;
      return await client.apply(path, object);
    };
    const shares = Array.from({ length: 16 * 12 }, (_, i) => oauthShare(`crowd-${i % 16}`, `s${i}`, i, BIG_PATTERNS));
    const { reconciler, listed: source } = authReconcilerFor(counting, quiet, shares, { writeBytesPerSecond: rate });
    const bursts: Burst[] = [];
    const reconcile = reconciler.reconcile.bind(reconciler);
    reconciler.reconcile = async () => {
      const start = Date.now();
      const before = bytes;
      const result = await reconcile();
      if (bytes > before) bursts.push({ start, end: Date.now(), bytes: bytes - before });
      return result;
    };
    const controller = new Controller(reconciler, {
      metrics: new OperatorMetrics(),
      logger: quiet,
      concurrency: 1,
      backoff: { baseMs: 100, maxMs: 1000 },
    });
    wireWatches(reconciler, controller);
    controller.queue.resume();
    controller.add(AUTH_CONFIG_KEY);
    const started = Date.now();
    for (let round = 0; Date.now() - started < ms; round++) {
      for (let n = 0; n < 16; n++) {
        const old = source.items[(round * 16 + n) % source.items.length] as Share;
        const patterns = [`*@round-${round}.example.com`, ...BIG_PATTERNS.slice(1)];
        const next = {
          ...old,
          metadata: { ...old.metadata, generation: (old.metadata.generation ?? 1) + 1 },
          spec: { ...old.spec, oauth: { provider: 'dev', emailAddressPatterns: patterns, checkInterval: '30m' } },
        } as Share;
        source.update(old, next);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    const seconds = (Date.now() - started) / 1000;
    await controller.queue.close(5000);
    return { writes, bytes, seconds, bursts };
  }

  it('spaces the rewrites by what each wrote at the write rate, the edits in between coalesced', async () => {
    const unbounded = await storm(Number.POSITIVE_INFINITY, 15_000);
    const bounded = await storm(AUTH_WRITE_BYTES_PER_SECOND, 15_000);
    const perSecond = (r: { writes: number; bytes: number; seconds: number }): string =>
      `${(r.writes / r.seconds).toFixed(1)} Secret writes/s, ${Math.round(r.bytes / r.seconds / 1024)} KiB/s`;
    figures.measure('pattern-edit storm (64 shares edited a second over 16 shards), unbounded', perSecond(unbounded));
    figures.measure('pattern-edit storm, the operator’s write bound (512 KiB/s)', perSecond(bounded));
    figures.measure(
      'pattern-edit storm: bytes written, unbounded ÷ bounded (same run; loaded machine)',
      (unbounded.bytes / bounded.bytes).toFixed(1),
    );
    // After a write of B bytes the next starts no sooner than B / rate later (a clock tick of slack).
    expect(bounded.bursts.length).toBeGreaterThan(1);
    const gaps = bounded.bursts.slice(1).map((b, i) => {
      const previous = bounded.bursts[i] as Burst;
      return b.start - previous.end - (previous.bytes * 1000) / AUTH_WRITE_BYTES_PER_SECOND;
    });
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(-5);
    expect(unbounded.bytes).toBeGreaterThan(bounded.bytes);
  }, 120_000);
});
