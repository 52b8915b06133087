import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { openSharesConfig, spawnFrontend } from '../support/frontend-process.ts';
import { get } from '../support/http.ts';

/**
 * Issue #12: the sidecar's memory is mostly what it loads. A plain `svc frontend` (one open share,
 * an idp1 provider not yet used, no metrics listener, one process) serves a request and stops; what
 * it loaded is reported by a preload. Node's fetch (undici, which brings node:tls, node:http2 and
 * node:zlib) comes only with a provider request, and prom-client only with the pieces it uses.
 * (node:cluster is not asserted: Node's own net.Server#listen loads it in every process.)
 */
describe('svc frontend loads only what it uses', () => {
  let backend: EchoBackend;
  let loaded: { builtins: string[]; packages: string[] };
  const dir = mkdtempSync(join(tmpdir(), 'svc-loaded-'));

  beforeAll(async () => {
    backend = await startEchoBackend();
    const file = join(dir, 'frontend.yaml');
    writeFileSync(file, openSharesConfig(['one'], backend.url));
    const report = join(dir, 'loaded.json');
    const { child, port } = await spawnFrontend(file, {
      execArgv: ['--import', join(import.meta.dirname, '../support/report-loaded-modules.ts')],
      env: { SVC_TEST_LOADED_MODULES: report },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      expect((await get(port, 'one.svc.localhost:8080', '/')).status).toBe(200);
      expect((await get(port, '127.0.0.1', '/readyz')).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    loaded = JSON.parse(readFileSync(report, 'utf8')) as typeof loaded;
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('reports what it loaded (the report itself works)', () => {
    expect(loaded.builtins).toEqual(expect.arrayContaining(['http', 'crypto']));
    expect(loaded.packages).toEqual(expect.arrayContaining(['pino', 'prom-client', 'yaml']));
  });

  it('does not load undici (node:tls, node:http2, node:zlib) before a provider request', () => {
    expect(loaded.builtins.filter((m) => ['tls', 'http2', 'zlib', 'https'].includes(m))).toEqual([]);
  });

  it("loads none of prom-client's unused parts (Pushgateway, Summary, OpenTelemetry exemplars)", () => {
    expect(loaded.packages.filter((p) => ['@opentelemetry/api', 'tdigest', 'bintrees'].includes(p))).toEqual([]);
  });
});
