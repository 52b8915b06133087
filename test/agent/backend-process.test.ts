import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, svc, tempDir } from '../serve/harness.ts';
import { echoBackend, request } from '../support/raw-http.ts';

/** `svc agent backend` as the operator's share pods run it (docs/operator.md, "Share children"; docs/agent.md, "Commands"). */
let backend: Awaited<ReturnType<typeof echoBackend>>;

beforeAll(async () => {
  backend = await echoBackend();
});
afterAll(async () => {
  await backend.close();
});

async function runBackend(
  args: string[],
  options: { execArgv?: string[]; env?: Record<string, string> } = {},
): Promise<{ port: number; stop(): Promise<number | null> }> {
  const node = join(ROOT, 'node_modules/.bin/node');
  const svcArgs = [...(options.execArgv ?? []), join(ROOT, 'bin/svc.js'), 'agent', 'backend', ...args];
  const child = spawn(node, svcArgs, {
    cwd: ROOT,
    env: { ...process.env, SVC_LOG_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
      const match = /"listen":"[^"]*:(\d+)"/.exec(err);
      if (match) resolve(Number(match[1]));
    });
    void exited.then((code) => reject(new Error(`svc agent backend exited ${code}: ${err}`)));
  });
  return {
    port,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

describe('svc agent backend', () => {
  it('proxies over keep-alive connections without loading http-proxy-3 and what it brings (node:http2, follow-redirects)', async () => {
    const report = join(tempDir('svc-agent-loaded-'), 'loaded.json');
    const running = await runBackend(['--backend-mode', 'proxy', '--target', backend.url, '--listen', '127.0.0.1:0'], {
      execArgv: ['--import', join(ROOT, 'test/support/report-loaded-modules.ts')],
      env: { SVC_TEST_LOADED_MODULES: report },
    });
    try {
      expect((await request(running.port, '/')).status).toBe(200);
    } finally {
      expect(await running.stop()).toBe(0);
    }
    const loaded = JSON.parse(readFileSync(report, 'utf8')) as { builtins: string[]; packages: string[] };
    expect(loaded.packages).toContain('commander');
    // svc's own log writer: no pino, so no thread-stream and no node:worker_threads in a share pod.
    expect(loaded.packages).not.toContain('thread-stream');
    expect(loaded.builtins).not.toContain('worker_threads');
    expect(loaded.packages.filter((p) => ['http-proxy-3', 'follow-redirects'].includes(p))).toEqual([]);
    expect(loaded.builtins.filter((m) => ['http2', 'tls', 'https'].includes(m))).toEqual([]);
  });

  it('proxies every path (health paths included) to the target and strips identity look-alikes', async () => {
    const running = await runBackend(['--backend-mode', 'proxy', '--target', backend.url, '--listen', '127.0.0.1:0']);
    try {
      for (const path of ['/app?q=1', '/healthz', '/readyz']) {
        const reply = await request(running.port, path, {
          headers: { 'svc-auth-email': 'x@example.com', svc_auth_provider: 'x' },
        });
        const seen = JSON.parse(reply.body) as { url: string; headers: Record<string, string> };
        expect(seen.url).toBe(path);
        expect(seen.headers['svc-auth-email']).toBeUndefined();
        expect(seen.headers.svc_auth_provider).toBeUndefined();
      }
    } finally {
      expect(await running.stop()).toBe(0);
    }
  });

  it('passes identity headers on loopback when the OAuth sidecar is in front', async () => {
    const running = await runBackend([
      '--backend-mode',
      'proxy',
      '--target',
      backend.url,
      '--listen',
      '127.0.0.1:0',
      '--identity-headers',
      'pass',
    ]);
    try {
      const reply = await request(running.port, '/', { headers: { 'svc-auth-email': 'alice@example.com' } });
      expect((JSON.parse(reply.body) as { headers: Record<string, string> }).headers['svc-auth-email']).toBe(
        'alice@example.com',
      );
    } finally {
      await running.stop();
    }
  });

  it('serves a folder in web mode', async () => {
    const dir = tempDir('svc-backend-');
    mkdirSync(join(dir, 'www'));
    writeFileSync(join(dir, 'www', 'index.html'), 'pod page');
    writeFileSync(join(dir, 'secret.txt'), 'outside');
    const running = await runBackend([
      '--backend-mode',
      'web',
      '--target',
      join(dir, 'www'),
      '--listen',
      '127.0.0.1:0',
    ]);
    try {
      expect((await request(running.port, '/')).body).toBe('pod page');
      expect((await request(running.port, '/%2e%2e/secret.txt')).status).toBe(400);
    } finally {
      await running.stop();
    }
  });

  it('refuses unsafe or invalid arguments, naming each', async () => {
    const result = await svc([
      'agent',
      'backend',
      '--backend-mode',
      'web',
      '--target',
      '/no/such/folder',
      '--listen',
      '0.0.0.0:0',
      '--identity-headers',
      'pass',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--identity-headers: pass is only allowed on a loopback listener');
    expect(result.stderr).toContain('--target: folder /no/such/folder does not exist');
    const bad = await svc([
      'agent',
      'backend',
      '--backend-mode',
      'proxy',
      '--target',
      'nope',
      '--listen',
      '127.0.0.1:0',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--target: must be an absolute URL, got "nope"');
  });
});
