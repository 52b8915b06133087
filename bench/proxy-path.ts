/**
 * `npm run bench:proxy-path` — the frontend's forwarding path alone: http-proxy-3 (what
 * sidecar/proxy.ts uses) against a bare `http.request` keep-alive pipe, both in their own process
 * in front of the same backend, loaded in interleaved rounds by the same generator. No OAuth, no
 * routing: this isolates what the proxy library costs per request.
 *
 *   npm run bench:proxy-path -- [--rounds 3] [--duration 5] [--connections 32]
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { FixedBackend } from './lib/fixed-backend.ts';
import { runLoad } from './lib/load.ts';
import { commandExists, cpuSeconds, installCleanup, memoryKiB, startModule, stopAll } from './lib/processes.ts';
import type { ProxyPath } from './lib/proxy-paths.ts';
import { fixed, markdownTable, mib, ratio } from './lib/report.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '3' },
      duration: { type: 'string', default: '5' },
      connections: { type: 'string', default: '32' },
    },
  });
  const rounds = Number(values.rounds);
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  if (![rounds, duration, connections].every((n) => Number.isInteger(n) && n > 0))
    throw new Error('--rounds, --duration and --connections must be positive integers');
  installCleanup();
  const tool = commandExists('wrk') ? 'wrk' : 'autocannon';
  const backend = await startModule<FixedBackend>(
    'backend',
    join(ROOT, 'bench/lib/fixed-backend.ts'),
    'startFixedBackend',
    {},
  );
  const paths: ProxyPath[] = ['http-proxy-3', 'lean', 'lean-lists'];
  const proxies = await Promise.all(
    paths.map((path) =>
      startModule<{ url: string }>(path, join(ROOT, 'bench/lib/proxy-paths.ts'), 'startProxyPath', {
        path,
        upstream: backend.ready.url,
      }),
    ),
  );
  const totals = paths.map(() => ({ requests: 0, seconds: 0, cpu: 0 }));
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, proxy] of proxies.entries()) {
      process.stderr.write(`round ${round + 1}/${rounds}: ${paths[i]}, ${duration}s (${tool})\n`);
      const before = cpuSeconds(proxy.pid) ?? 0;
      const r = await runLoad(tool, { url: proxy.ready.url, connections, durationSeconds: duration, warmupSeconds: 1 });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${paths[i]}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      const t = totals[i];
      if (!t) continue;
      t.requests += r.requests;
      t.seconds += r.durationSeconds;
      t.cpu += (cpuSeconds(proxy.pid) ?? 0) - before;
    }
  }
  const base = totals[0] ? totals[0].requests / totals[0].seconds : undefined;
  const rows = totals.map((t, i) => [
    paths[i] ?? '',
    fixed(t.requests / t.seconds, 0),
    ratio(t.requests / t.seconds, base),
    fixed((t.cpu / t.requests) * 1e6, 0),
    mib(memoryKiB(proxies[i]?.pid ?? 0).peak),
  ]);
  process.stdout.write(
    `\n${tool}, ${connections} connections, ${rounds} interleaved rounds × ${duration}s, 64-byte body\n\n` +
      `${markdownTable(['proxy path', 'req/s', 'vs http-proxy-3', 'proxy CPU µs/req', 'peak RSS'], rows)}\n`,
  );
  return 0;
}

main().then(
  async (code) => {
    await stopAll();
    process.exit(code);
  },
  async (err: unknown) => {
    process.stderr.write(`bench:proxy-path failed: ${err instanceof Error ? err.message : String(err)}\n`);
    await stopAll(1000);
    process.exit(1);
  },
);
