import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseFrontendConfig } from '../../lib/config/frontend.ts';
import { ConfigError } from '../../lib/errors.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { spawnFrontend } from '../support/frontend-process.ts';
import { get } from '../support/http.ts';

const oauth = {
  bind_address: '127.0.0.1:0',
  endpoint_url: 'http://auth.svc.localhost:8080',
  cookie_name: 'svc-auth-session',
  cookie_domain: 'svc.localhost',
  session_lifetime: '6h',
  intermediate_lifetime: '5m',
  signing_key: 'k'.repeat(40),
  encryption_key: 'e'.repeat(30),
  providers: [{ name: 'google', type: 'idp1', client_id: 'id', client_secret: 'very-secret-value' }],
};

describe('frontend `workers` setting', () => {
  it('defaults to one process, takes a number or auto, and names the field when it is wrong', () => {
    expect(parseFrontendConfig({ oauth, shares: [] }).workers).toBe(1);
    expect(parseFrontendConfig({ oauth, shares: [], workers: 3 }).workers).toBe(3);
    expect(parseFrontendConfig({ oauth, shares: [], workers: 'auto' }).workers).toBe(
      Math.min(availableParallelism(), 64),
    );
    for (const bad of [0, 65, 1.5, 'many', '2']) {
      let problems: readonly { path: string; message: string }[] = [];
      try {
        parseFrontendConfig({ oauth, shares: [], workers: bad });
      } catch (err) {
        if (err instanceof ConfigError) problems = err.problems;
      }
      expect(problems.map((p) => p.path)).toEqual(['workers']);
      expect(problems[0]?.message).toMatch(/whole number 1–64 or "auto"/);
    }
  });
});

describe('shared state over node:cluster IPC', () => {
  it('refuses a login state a second time in another worker, and every worker learns of a logout', () => {
    const out = execFileSync(process.execPath, [join(import.meta.dirname, 'fixtures/shared-state-cluster.ts')], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(JSON.parse(out)).toEqual({
      first: { claimed: true, again: false },
      // Started after the first worker's logout: told of it by the primary when it said hello.
      second: { replay: false, other: true, knowsSession1: true },
      firstLater: { heardOfSession2: true },
    });
  });
});

/** The pids of a process's children (Linux /proc). */
function childrenOf(pid: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return text ? text.split(/\s+/).map(Number) : [];
  } catch {
    return [];
  }
}

describe('svc frontend with workers: 2', () => {
  let backend: EchoBackend;
  let child: ChildProcess;
  let port = 0;
  let logged = (): string => '';
  const host = 'one.svc.localhost:8080';
  const eventually = async (check: () => boolean | Promise<boolean>): Promise<boolean> => {
    for (let i = 0; i < 100; i++) {
      if (await check()) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };

  beforeAll(async () => {
    backend = await startEchoBackend();
    const dir = mkdtempSync(join(tmpdir(), 'svc-workers-'));
    const file = join(dir, 'frontend.yaml');
    writeFileSync(file, JSON.stringify({ oauth, workers: 2, shares: [{ token: 'one', target: backend.url.href }] }));
    const frontend = await spawnFrontend(file);
    ({ child, port } = frontend);
    logged = frontend.stderr;
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await backend?.close();
  });

  it('serves the share from two worker processes on one port, and replaces a worker that dies', async () => {
    const pid = child.pid as number;
    // Both listening: killing the only listening worker would close the shared port-0 listener.
    const listening = (): number => logged().split('"msg":"frontend listening"').length - 1;
    expect(await eventually(() => childrenOf(pid).length === 2 && listening() === 2), logged()).toBe(true);
    for (let i = 0; i < 4; i++) expect((await get(port, host, '/')).status).toBe(200);
    const [victim] = childrenOf(pid);
    process.kill(victim as number, 'SIGKILL');
    const replaced = (): boolean => !childrenOf(pid).includes(victim as number) && listening() === 3;
    expect(await eventually(() => childrenOf(pid).length === 2 && replaced()), logged()).toBe(true);
    expect(logged()).toContain('frontend worker died; starting another');
    for (let i = 0; i < 4; i++) expect((await get(port, host, '/')).status).toBe(200);
  });

  it('stops every worker on SIGTERM and exits 0', async () => {
    const workers = childrenOf(child.pid as number);
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    for (const w of workers) expect(() => process.kill(w, 0)).toThrow();
  });
});
