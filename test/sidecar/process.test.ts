import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { openSharesConfig, spawnFrontend } from '../support/frontend-process.ts';
import { get } from '../support/http.ts';

/** `svc frontend --config file` as the sidecar runs it: a real process, its file edited under it. */
describe('svc frontend process', () => {
  let backend: EchoBackend;
  let child: ChildProcess;
  let port = 0;
  let logged = (): string => '';
  const dir = mkdtempSync(join(tmpdir(), 'svc-sidecar-'));
  const file = join(dir, 'frontend.yaml');
  const write = (tokens: string[]) => writeFileSync(file, openSharesConfig(tokens, backend.url));

  beforeAll(async () => {
    backend = await startEchoBackend();
    write(['one']);
    const frontend = await spawnFrontend(file);
    ({ child, port } = frontend);
    logged = frontend.stderr;
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
    expect(await eventually(() => Promise.resolve(logged().includes('configuration change rejected')))).toBe(true);
    expect((await get(port, host('two'), '/')).status).toBe(200);
    expect(logged()).not.toContain('very-secret-value');
    expect(logged()).not.toContain('k'.repeat(40));
  });

  it('stops cleanly on SIGTERM', async () => {
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
