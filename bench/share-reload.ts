/**
 * Auth endpoint reload benchmark (not a test): the time of `loadFrontendConfig` over a
 * share_directory of 16 shard files as the operator renders them (JSON, one email pattern a share),
 * first in full (a start, or a reload without kept files) and then as a reload after one shard
 * changed, the other 15 kept (lib/config/share-file-cache.ts). A reload runs on the event loop, so
 * its time is how long the auth endpoint does not serve.
 *
 *   npm run bench:share-reload                              # 16,000 and 68,000 shares
 *   npm run bench:share-reload -- --shares 4000 --runs 5
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadFrontendConfig } from '../lib/config/frontend.ts';
import { ShareFileCache } from '../lib/config/share-file-cache.ts';
import { AUTH_SHARDS, renderShards, shardKey, shardOf } from '../operator/auth-shards.ts';
import type { ValidShare } from '../operator/share-children.ts';
import { openSharesConfig } from '../test/support/frontend-process.ts';
import { projectFiles } from '../test/support/projected-volume.ts';

/** Any key: the bench measures loading, not which shard a share lands in. */
const KEY = shardKey('bench');

const { values } = parseArgs({
  options: { shares: { type: 'string', multiple: true }, runs: { type: 'string', default: '3' } },
});
const counts = (values.shares ?? ['16000', '68000']).map(Number);
const runs = Number(values.runs);

function share(i: number): ValidShare {
  const namespace = `team-${i % 30}`;
  const name = `app-${i}`;
  return {
    name,
    namespace,
    token: `t${String(i).padStart(11, '0')}`,
    instance: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    shareMode: 'public',
    backendMode: 'proxy',
    target: `http://${name}.${namespace}.svc:8080`,
    oauth: { provider: 'google', emailAddressPatterns: ['*@example.com'], checkInterval: '30m' },
  };
}

/** Milliseconds `fn` takes. */
function timed(fn: () => unknown): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

function shardFiles(shares: readonly ValidShare[]): Record<string, string> {
  const files: Record<string, string> = {};
  renderShards(shares, KEY).forEach((s, n) => {
    files[`shares-${String(n).padStart(2, '0')}.yaml`] = s.text;
  });
  return files;
}

function measure(count: number): void {
  const root = mkdtempSync(join(tmpdir(), 'svc-share-reload-'));
  try {
    mkdirSync(join(root, 'frontend'));
    const file = join(root, 'frontend', 'config.yaml');
    writeFileSync(file, `${openSharesConfig(['main'], new URL('http://app.svc:80'))}share_directory: ../auth-shares\n`);
    const shares = Array.from({ length: count }, (_, i) => share(i));
    let generation = 1;
    projectFiles(join(root, 'auth-shares'), shardFiles(shares), generation);
    const full: number[] = [];
    const oneShard: number[] = [];
    const cache = new ShareFileCache();
    loadFrontendConfig(file, { shareFiles: cache });
    for (let run = 0; run < runs; run++) {
      full.push(timed(() => loadFrontendConfig(file)));
      // One more share: only the shard it falls in changes, as when the operator adds a Share.
      shares.push(share(count + run));
      projectFiles(join(root, 'auth-shares'), shardFiles(shares), ++generation);
      oneShard.push(timed(() => loadFrontendConfig(file, { shareFiles: cache })));
    }
    const changed = shardOf(share(count).namespace, share(count).name, KEY);
    console.log(
      `${count} shares in ${AUTH_SHARDS} shards: full load ${median(full).toFixed(0)} ms, ` +
        `reload with one shard (${String(changed).padStart(2, '0')}) changed ${median(oneShard).toFixed(0)} ms ` +
        `(medians of ${runs}; ratio ${(median(full) / median(oneShard)).toFixed(1)}; ` +
        `load average ${loadavg()[0]?.toFixed(1)})`,
    );
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

for (const count of counts) measure(count);
