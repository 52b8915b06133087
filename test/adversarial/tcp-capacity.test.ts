import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { DEFAULT_TUNNEL_LIMITS, type TunnelLimits } from '../../lib/tunnel/protocol.ts';
import { suiteFigures } from '../support/figures.ts';
import { startTunnelFrontend, type TunnelFrontend } from '../support/tunnel-frontend.ts';
import { until } from '../support/until.ts';

/**
 * One account's TCP connections through the installation to its own TCP shares, whose target
 * accepts and never reads, while the account's access writes for as long as it may: each stuck
 * connection parks a stream window of bytes in the frontend. A TCP stream has no idle limit (a quiet
 * SSH session or pooled database connection must stay), so the frontend cuts one only when it is
 * stuck: bytes wait in it and none moved either way for `stream_idle_timeout`. A quiet connection
 * with nothing waiting stays open past it and still carries bytes.
 */
const TOKENS = {
  owner: 'svcv_mmmmmmmmmmmm_secret-of-environment-m-0123456789abcdefghijk',
  second: 'svcv_nnnnnnnnnnnn_secret-of-environment-n-0123456789abcdefghijk',
};
const IDENTITIES: Record<string, EnvironmentIdentity> = {
  [TOKENS.owner]: { envZId: 'mmmmmmmmmmmm', accountId: 'mallory' },
  [TOKENS.second]: { envZId: 'nnnnnnnnnnnn', accountId: 'mallory' },
};
const TCP_SHARES = ['db1', 'db2', 'quiet'];
const directory: ShareDirectory = {
  lookup: (token): PublishedShare | undefined =>
    TCP_SHARES.includes(token)
      ? {
          token,
          instance: `${token}-1`,
          envZId: 'mmmmmmmmmmmm',
          accountId: 'mallory',
          shareMode: 'private',
          backendMode: 'tcp',
        }
      : undefined,
  authenticate: (token) => Promise.resolve(IDENTITIES[token]),
  onRevoked: () => () => undefined,
};
const IDLE_MS = 3_000;
const LIMITS: TunnelLimits = { ...DEFAULT_TUNNEL_LIMITS, streamIdleMs: IDLE_MS };
const PER_SHARE = 25;
const MIB = 1024 * 1024;

const figures = suiteFigures('tcp-capacity');
const stuck = figures.attackClass(
  "One account's TCP connections to its own shares whose target never reads: the frontend cuts them once stuck; a quiet connection stays",
  'TCP streams had no idle limit: each held ~1.3 MiB in the frontend for as long as the account liked',
);
let installation: TunnelFrontend;
let child: ChildProcess | undefined;

/** The process's RSS and the external memory its buffers hold. */
function memory(): { rss: number; buffers: number } {
  globalThis.gc?.();
  const { rss, arrayBuffers, external } = process.memoryUsage();
  return { rss, buffers: Math.max(arrayBuffers, external) };
}

beforeAll(async () => {
  const logger = createLogger('tcp-capacity', { level: 'silent' });
  installation = await startTunnelFrontend({ domain: 'tcp.localhost', directory, limits: LIMITS, logger });
});

afterAll(async () => {
  figures.write();
  child?.kill();
  installation?.endpoint.close();
  await installation?.frontend.close();
});

describe('stuck TCP connections of one account', () => {
  it('are cut after the idle limit without progress; a quiet one carries bytes after it', async () => {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = memory();
    const script = join(import.meta.dirname, '../support/tcp-stall-child.ts');
    const args = [script, String(installation.frontend.port), TOKENS.owner, TOKENS.second, String(PER_SHARE)];
    child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
    await until(() => lines.includes('opened'), 'the stuck connections', 60_000);
    const openedAt = Date.now();
    let peak = memory();
    const state = () => JSON.parse(lines.at(-1) ?? '{}') as { stuckOpen?: number; quietOpen?: boolean };
    await stuck.run(async () => {
      await until(
        () => {
          const now = memory();
          peak = { rss: Math.max(peak.rss, now.rss), buffers: Math.max(peak.buffers, now.buffers) };
          return state().stuckOpen === 0;
        },
        'the stuck connections cut',
        15 * IDLE_MS,
        250,
      );
      const cutAfterMs = Date.now() - openedAt;
      // Quiet for three idle limits, then it still carries bytes both ways.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 3 * IDLE_MS - cutAfterMs)));
      expect(state().quietOpen).toBe(true);
      child!.stdin!.write('probe\n');
      const echo = await until(() => lines.find((l) => l.includes('"echo"')), 'the quiet connection echoing');
      expect(JSON.parse(echo)).toEqual({ echo: 'still there\n' });
      figures.measure('stuck TCP connections opened (one account, two shares)', 2 * PER_SHARE);
      figures.measure('stream_idle_timeout in this test (ms)', IDLE_MS);
      figures.measure(
        'all stuck connections cut after (ms, from the last one opened)',
        Math.round(cutAfterMs / 100) * 100,
      );
      const mib = (bytes: number) => Math.round(bytes / MIB);
      figures.measure('frontend RSS growth at the peak (MiB)', mib(peak.rss - before.rss));
      figures.measure('frontend buffers at the peak (MiB, external memory)', mib(peak.buffers - before.buffers));
    });
  }, 120_000);
});
