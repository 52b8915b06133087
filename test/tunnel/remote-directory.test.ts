import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_AGENT_TIMEOUT_MS } from '../../controller/config.ts';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { startController, type RunningController } from '../../controller/start.ts';
import { publicFrontendTunnel } from '../../controller/public-frontend.ts';
import { newEnvironmentToken } from '../../controller/tokens.ts';
import type { ShareRegistry } from '../../controller/share-registry.ts';
import { createLogger } from '../../lib/logger.ts';
import { FRONTEND_REGISTRY_PATH, FRONTEND_TOKEN_HEADER } from '../../lib/tunnel/frontend-api.ts';
import { RemoteShareDirectory } from '../../sidecar/tunnel/remote-directory.ts';
import { LogCapture } from '../support/frontend.ts';
import { tempDir } from '../controller/harness.ts';

/**
 * RemoteShareDirectory against a real controller API (in this process, file store, port 0 then the
 * same port after a restart): the registry's view, revocations announced through the long poll,
 * and the re-check of accepted credentials after a gap it cannot see through.
 */
const CREDENTIAL = 'remote-directory-credential-0123456789abcdef';
/** The controller's log, at debug so that lines demoted from info are seen with their level. */
const controllerLogs = new LogCapture();
const logger = createLogger('test', { level: 'debug', destination: controllerLogs });
let dataDir: string;
let running: { controller: RunningController; registry: ShareRegistry; store: ControllerFileStore } | undefined;
let port = 0;
let directory: RemoteShareDirectory;
let logs: LogCapture;
const revoked: string[] = [];

async function startRun(): Promise<NonNullable<typeof running>> {
  const store = new ControllerFileStore(dataDir);
  const tunnel = await publicFrontendTunnel(
    store,
    {
      domain: 'share.test',
      endpointUrl: new URL('https://share.test'),
      credential: CREDENTIAL,
      credentialFile: '',
      providers: [],
    },
    logger,
  );
  const controller = await startController({
    settings: { listen: { host: '127.0.0.1', port }, maxBodyBytes: 4096, agentTimeoutMs: DEFAULT_AGENT_TIMEOUT_MS },
    store,
    logger,
    tunnel,
  });
  port = controller.port;
  return { controller, registry: tunnel.registry, store };
}

async function environment(store: ControllerFileStore, envZId: string): Promise<string> {
  const { token, hash } = newEnvironmentToken(envZId);
  await store.createEnvironment({
    envZId,
    accountId: 'acctremoteaa',
    description: '',
    host: '',
    tokenHash: hash,
    createdAt: '',
  });
  return token;
}

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

beforeAll(async () => {
  dataDir = join(tempDir('svc-remote-directory-'), 'controller');
  running = await startRun();
  await running.store.createAccount({
    id: 'acctremoteaa',
    email: 'r@example.com',
    tokenHash: 'a'.repeat(64),
    createdAt: '',
  });
  logs = new LogCapture();
  directory = new RemoteShareDirectory({
    controllerUrl: new URL(`http://127.0.0.1:${port}`),
    credential: CREDENTIAL,
    logger: createLogger('frontend', { destination: logs }),
    backoff: { baseMs: 50, maxMs: 100 },
  });
  directory.onRevoked((envZId) => revoked.push(envZId));
  await directory.ready;
});

afterAll(async () => {
  await directory?.close();
  await running?.controller.close();
});

describe('RemoteShareDirectory', () => {
  it('leaves its answered registry polls out of the controller’s info log; a refused poll is logged at info', async () => {
    const polls = () =>
      controllerLogs.lines
        .map((l) => JSON.parse(l) as { level: number; msg: string; path?: string; status?: number })
        .filter((l) => l.msg === 'api request' && l.path === FRONTEND_REGISTRY_PATH);
    await until(() => polls().some((l) => l.status === 200), 'an answered poll');
    const answered = polls().filter((l) => l.status === 200);
    expect(answered.map((l) => l.level)).toEqual(answered.map(() => 20));
    const refused = await fetch(`http://127.0.0.1:${port}${FRONTEND_REGISTRY_PATH}`, {
      headers: { [FRONTEND_TOKEN_HEADER]: 'not-the-credential' },
    });
    expect(refused.status).toBe(401);
    await until(() => polls().some((l) => l.status === 401), 'the refused poll’s line');
    expect(polls().find((l) => l.status === 401)).toMatchObject({ level: 30 });
  });

  it('follows the registry: a published share appears, a revoked environment is announced once', async () => {
    const { registry, store } = running!;
    const token = await environment(store, 'envremoteaaa');
    const env = (await store.getEnvironment('envremoteaaa'))!;
    expect(await directory.authenticate(token)).toEqual({ envZId: 'envremoteaaa', accountId: 'acctremoteaa' });
    expect(await directory.authenticate(`${token}x`)).toBeUndefined();
    await registry.register(env, { token: 'remoteone', shareMode: 'public', backendMode: 'proxy' });
    await until(() => directory.lookup('remoteone') !== undefined, 'the share');
    expect(directory.lookup('remoteone')).toMatchObject({ envZId: 'envremoteaaa', shareMode: 'public' });
    await registry.removeEnvironment('envremoteaaa');
    await until(() => revoked.includes('envremoteaaa'), 'the revocation');
    expect(directory.lookup('remoteone')).toBeUndefined();
    await registry.register(env, { token: 'remotetwo', shareMode: 'private', backendMode: 'web' });
    await until(() => directory.lookup('remotetwo') !== undefined, 'the next share');
    expect(revoked.filter((e) => e === 'envremoteaaa')).toHaveLength(1);
  });

  it('serves its last view while the controller is down; after a restart it re-checks accepted credentials and revokes the refused', async () => {
    const { store } = running!;
    const kept = await environment(store, 'envremotekpt');
    const gone = await environment(store, 'envremotegon');
    await directory.authenticate(kept);
    await directory.authenticate(gone);
    await running!.controller.close();
    running = undefined;
    await until(() => logs.text.includes('serving the last view'), 'the controller to be missed');
    expect(directory.lookup('remotetwo')).toBeDefined();
    expect(directory.isReady).toBe(true);
    // Disabled while this frontend could not see it: no revocation reaches it through the poll.
    await new ControllerFileStore(dataDir).deleteEnvironment('envremotegon');
    running = await startRun();
    await until(() => revoked.includes('envremotegon'), 'the refused credential to be revoked');
    expect(revoked).not.toContain('envremotekpt');
    expect(logs.text).toContain('re-checked tunnel credentials after a gap');
  });
});
