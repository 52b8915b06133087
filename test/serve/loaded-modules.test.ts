import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startSvc, svcCli, tempDir, writeYaml, type Process } from '../controller/harness.ts';
import { request } from '../support/raw-http.ts';

/**
 * Node's fetch (its bundled undici, with node:tls, node:http2 and node:zlib) is loaded by any ESM
 * import of node:http, so product code takes node:http through lib/node-http.ts (docs/benchmarks-history.md,
 * "Frontend memory"). Each process started here is idle — none calls fetch — and must
 * not have loaded undici: `svc serve`, a CLI command against it, the share pods' `svc agent backend`
 * and `svc controller`. (node:tls and node:zlib still come with ws, and node:http2
 * with the tunnel code; only undici is asserted. The operator loads @kubernetes/client-node, which
 * uses undici for its own requests.)
 */
const PRELOAD = join(import.meta.dirname, '../support/report-loaded-modules.ts');
const dir = tempDir('svc-loaded-');
let serial = 0;

interface Loaded {
  builtins: string[];
  packages: string[];
  undici: boolean;
}

/** Environment that makes a `svc` process report what it loaded; `read()` parses the report after it exited. */
function reporting(): { env: NodeJS.ProcessEnv; read(): Loaded } {
  const report = join(dir, `loaded-${++serial}.json`);
  return {
    env: { NODE_OPTIONS: `--import=${PRELOAD}`, SVC_TEST_LOADED_MODULES: report },
    read: () => JSON.parse(readFileSync(report, 'utf8')) as Loaded,
  };
}

/** Starts `svc <args>`, waits for `ready`, runs `during`, stops it (exit 0 expected) and returns what it loaded. */
async function loadedBy(
  args: readonly string[],
  ready: RegExp,
  during?: (proc: Process) => Promise<void>,
): Promise<Loaded> {
  const r = reporting();
  const proc: Process = await startSvc(args, ready, { env: r.env });
  try {
    await during?.(proc);
  } finally {
    expect(await proc.stop(), proc.output()).toBe(0);
  }
  return r.read();
}

describe('idle svc processes do not load undici', () => {
  const loaded: Record<string, Loaded> = {};

  beforeAll(async () => {
    const dataDir = join(dir, 'serve');
    loaded['svc serve'] = await loadedBy(
      ['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0'],
      /svc serve is ready/,
      async () => {
        const r = reporting();
        const status = await svcCli(['status', '--data-dir', dataDir], { env: r.env });
        expect(status.code, status.stderr).toBe(0);
        loaded['svc status'] = r.read();
      },
    );
    loaded['svc agent backend'] = await loadedBy(
      ['agent', 'backend', '--backend-mode', 'proxy', '--target', 'http://127.0.0.1:9', '--listen', '127.0.0.1:0'],
      /"listen":"[^"]*:(\d+)"/,
      // One request (refused upstream: 502): the backend serves while it is measured.
      async (proc) => {
        const port = Number(/"listen":"[^"]*:(\d+)"/.exec(proc.output())?.[1]);
        expect((await request(port, '/')).status).toBe(502);
      },
    );
    const config = writeYaml(join(dir, 'controller.yaml'), ['controller: { listen: 127.0.0.1:0 }']);
    loaded['svc controller'] = await loadedBy(
      ['controller', '--config', config, '--data-dir', join(dir, 'controller')],
      /api: +http:\/\/127\.0\.0\.1:(\d+)/,
      async (proc) => {
        const port = Number(/api: +http:\/\/127\.0\.0\.1:(\d+)/.exec(proc.output())?.[1]);
        expect((await request(port, '/healthz')).status).toBe(200);
      },
    );
  }, 120_000);

  it('reports what each process loaded (the report itself works)', () => {
    expect(Object.keys(loaded).sort()).toEqual(['svc agent backend', 'svc controller', 'svc serve', 'svc status']);
    for (const l of Object.values(loaded)) expect(l.builtins).toContain('http');
    expect(loaded['svc serve']?.packages).toContain('commander');
  });

  it.each(['svc serve', 'svc status', 'svc agent backend', 'svc controller'])('%s has not loaded undici', (role) => {
    expect(loaded[role]?.undici).toBe(false);
  });
});
