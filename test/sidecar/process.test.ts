import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { get } from '../support/http.ts';

/** `svc frontend --config file` as the sidecar runs it: a real process, its file edited under it. */
describe('svc frontend process', () => {
  let backend: EchoBackend;
  let child: ChildProcess;
  let port = 0;
  let stderr = '';
  const dir = mkdtempSync(join(tmpdir(), 'svc-sidecar-'));
  const file = join(dir, 'frontend.yaml');
  const write = (tokens: string[]) =>
    writeFileSync(
      file,
      `oauth:
  bind_address: 127.0.0.1:0
  endpoint_url: http://auth.svc.localhost:8080
  cookie_name: svc-auth-session
  cookie_domain: svc.localhost
  session_lifetime: 6h
  intermediate_lifetime: 5m
  signing_key: ${'k'.repeat(40)}
  encryption_key: ${'e'.repeat(30)}
  providers:
    - { name: google, type: idp1, client_id: id, client_secret: very-secret-value }
shares:
${tokens.map((t) => `  - { token: ${t}, target: "${backend.url.href}" }`).join('\n')}
`,
    );

  beforeAll(async () => {
    backend = await startEchoBackend();
    write(['one']);
    child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/svc.js'), 'frontend', '--config', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    port = await new Promise<number>((resolve, reject) => {
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8');
        const match = /"port":(\d+)/.exec(stderr);
        if (match) resolve(Number(match[1]));
      });
      child.on('exit', (code) => reject(new Error(`frontend exited ${code}: ${stderr}`)));
    });
  });
  afterAll(async () => {
    child?.kill('SIGTERM');
    await backend?.close();
  });

  const host = (t: string) => `${t}.svc.localhost:8080`;
  const eventually = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 50; i++) {
      if (await check()) return true;
      await new Promise((r) => setTimeout(r, 200));
    }
    return false;
  };

  it('serves the shares of its file and picks up edits without a restart', async () => {
    expect((await get(port, host('one'), '/')).status).toBe(200);
    expect((await get(port, host('two'), '/')).status).toBe(404);
    write(['one', 'two']);
    expect(await eventually(async () => (await get(port, host('two'), '/')).status === 200)).toBe(true);
  });

  it('keeps the last good shares when an edit is invalid, and logs why without secrets', async () => {
    writeFileSync(file, 'oauth: {}\nshares: nope\n');
    expect(await eventually(() => Promise.resolve(stderr.includes('configuration change rejected')))).toBe(true);
    expect((await get(port, host('two'), '/')).status).toBe(200);
    expect(stderr).not.toContain('very-secret-value');
    expect(stderr).not.toContain('k'.repeat(40));
  });

  it('stops cleanly on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
