import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { openSharesConfig, spawnFrontend } from '../support/frontend-process.ts';
import { get } from '../support/http.ts';
import { projectFiles } from '../support/projected-volume.ts';
import { until } from '../support/until.ts';

/**
 * `svc frontend` as the Kubernetes auth endpoint runs it: its config names a share_directory that
 * the kubelet updates as a projected Secret volume (a `..data` symlink swapped to a new directory),
 * and shards appear that were absent (optional Secrets created later).
 */
describe('svc frontend with a share_directory', () => {
  let backend: EchoBackend;
  let child: ChildProcess;
  let port = 0;
  let logged = (): string => '';
  const root = mkdtempSync(join(tmpdir(), 'svc-share-dir-process-'));
  const shares = join(root, 'auth-shares');
  const list = (...tokens: string[]) => JSON.stringify(tokens.map((token) => ({ token, target: backend.url.href })));
  const status = async (token: string) => (await get(port, `${token}.svc.localhost:8080`, '/')).status;
  const serving = (token: string) => until(async () => (await status(token)) === 200, `${token} served`, 15_000);

  beforeAll(async () => {
    backend = await startEchoBackend();
    mkdirSync(join(root, 'frontend'));
    const file = join(root, 'frontend', 'config.yaml');
    writeFileSync(file, `${openSharesConfig(['main'], backend.url)}share_directory: ../auth-shares\n`);
    projectFiles(shares, { 'shares-00.yaml': list('alpha') }, 1);
    ({ child, port, stderr: logged } = await spawnFrontend(file));
  });
  afterAll(async () => {
    child?.kill('SIGTERM');
    await backend?.close();
  });

  it('serves the shares of its file and of every shard file', async () => {
    expect(await status('main')).toBe(200);
    expect(await status('alpha')).toBe(200);
    expect(await status('beta')).toBe(404);
  });

  it('picks up a shard that appears and a shard whose data was swapped, without a restart', async () => {
    projectFiles(shares, { 'shares-00.yaml': list('alpha', 'gamma'), 'shares-07.yaml': list('beta') }, 2);
    await serving('beta');
    await serving('gamma');
    expect(await status('alpha')).toBe(200);
  });

  it('keeps the last good shares when a token appears in two shards, and says which files', async () => {
    projectFiles(shares, { 'shares-00.yaml': list('alpha'), 'shares-07.yaml': list('beta', 'alpha', 'delta') }, 3);
    await until(() => logged().includes('configuration change rejected'), 'the change rejected', 15_000);
    expect(logged()).toContain(`${join(shares, 'shares-07.yaml')}[1].token: duplicate share token`);
    expect(await status('gamma')).toBe(200);
    expect(await status('delta')).toBe(404);
  });
});
