import { mkdtempSync } from 'node:fs';
import type { Server } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { openApi } from '../../controller/openapi.ts';
import { RemotingHub } from '../../controller/remoting-hub.ts';
import { createApiServer } from '../../controller/server.ts';
import type { ControllerStore } from '../../controller/store.ts';
import { createLogger } from '../../lib/logger.ts';
import { ENROLLMENT_HEADER, REMOTING_PATH } from '../../lib/remoting/protocol.ts';
import type { ShareDirectory } from '../../lib/tunnel/directory.ts';
import {
  ACCESS_PATH,
  DEFAULT_TUNNEL_LIMITS,
  DIRECT_UPGRADE,
  ENVIRONMENT_TOKEN_HEADER,
  TUNNEL_PATH,
} from '../../lib/tunnel/protocol.ts';
import { suiteFigures } from '../support/figures.ts';
import { request } from '../support/raw-http.ts';
import { startTunnelFrontend, type TunnelFrontend } from '../support/tunnel-frontend.ts';
import { uncaughtErrors } from '../support/uncaught.ts';

/**
 * Node's server takes its own 'error' listener off a socket it hands to 'upgrade', and the tunnel
 * endpoint and the controller's remoting channel check a token (a round trip to the controller, a
 * store lookup) before they touch the socket again. Anyone, without any credential (a forged token
 * of the right shape), could reset the connection during that check: the ECONNRESET reached no
 * listener and ended the frontend (or the controller) with every account in it. The socket is
 * destroyed now, and the process answers the next request.
 */
const CHECK_MS = 100;
const FORGED_ENV_TOKEN = `svcv_zzzzzzzzzzzz_${'f'.repeat(43)}`;
const FORGED_ENROLLMENT = `svce_zzzzzzzzzzzz_${'f'.repeat(43)}`;
const logger = createLogger('upgrade-reset', { level: 'silent' });
const figures = suiteFigures('upgrade-reset');
const resets = figures.attackClass(
  'A client with a forged token resets its upgrade while the token is checked (tunnel, access, remoting)',
  'the frontend (or controller) exited on the unheard ECONNRESET: the socket is destroyed now',
);
const uncaught = uncaughtErrors();
const slowly = <T>(value: T): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(value), CHECK_MS));

let frontend: TunnelFrontend;
let controller: Server;
let store: ControllerFileStore;
let hub: RemotingHub;

beforeAll(async () => {
  const directory: ShareDirectory = {
    lookup: () => undefined,
    authenticate: () => slowly(undefined),
    onRevoked: () => () => undefined,
  };
  const limits = { ...DEFAULT_TUNNEL_LIMITS, transports: ['direct', 'websocket'] } as typeof DEFAULT_TUNNEL_LIMITS;
  frontend = await startTunnelFrontend({ domain: 'reset.localhost', directory, limits, logger });
  store = new ControllerFileStore(mkdtempSync(join(tmpdir(), 'upgrade-reset-')));
  const slowStore = { getEnrollment: () => slowly(undefined) } as unknown as ControllerStore;
  const identity = { zId: 'unused', publicKey: 'unused' } as unknown as ConstructorParameters<
    typeof RemotingHub
  >[0]['identity'];
  hub = new RemotingHub({ store: slowStore, identity, logger, timeoutMs: 1000 });
  controller = createApiServer({ store, logger, openapi: openApi(), operations: new Map(), maxBodyBytes: 1024, hub });
  await new Promise<void>((resolve) => controller.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  figures.write();
  hub?.close();
  controller?.closeAllConnections();
  await new Promise((resolve) => controller?.close(resolve));
  await store?.close();
  await frontend?.frontend.close();
});

/** Sends an upgrade's head, then resets the connection (RST) while the server checks its token. */
async function resetDuringCheck(port: number, head: string): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`${head}\r\n`);
  await new Promise((resolve) => setTimeout(resolve, CHECK_MS / 5));
  socket.resetAndDestroy();
  await new Promise((resolve) => setTimeout(resolve, CHECK_MS * 2));
}

const WEBSOCKET = 'Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
const DIRECT = `Upgrade: ${DIRECT_UPGRADE}\r\n`;

describe.each([
  ['tunnel, direct', TUNNEL_PATH, DIRECT],
  ['tunnel, WebSocket', TUNNEL_PATH, WEBSOCKET],
  ['access, direct', ACCESS_PATH, DIRECT],
  ['access, WebSocket', ACCESS_PATH, WEBSOCKET],
])('the frontend: %s', (_name, path, upgrade) => {
  it('reset while the token is checked: the frontend goes on', () =>
    resets.run(async () => {
      const port = frontend.frontend.port;
      await resetDuringCheck(
        port,
        `GET ${path} HTTP/1.1\r\nHost: reset.localhost\r\nConnection: Upgrade\r\n${upgrade}` +
          `${ENVIRONMENT_TOKEN_HEADER}: ${FORGED_ENV_TOKEN}\r\n`,
      );
      expect(uncaught).toEqual([]);
      expect((await request(port, '/', { host: 'nowhere.reset.localhost' })).status).toBe(404);
    }));
});

it("the controller's remoting channel: reset while the enrollment is looked up, the controller goes on", () =>
  resets.run(async () => {
    const { port } = controller.address() as net.AddressInfo;
    await resetDuringCheck(
      port,
      `GET ${REMOTING_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n${WEBSOCKET}` +
        `${ENROLLMENT_HEADER}: ${FORGED_ENROLLMENT}\r\n`,
    );
    expect(uncaught).toEqual([]);
    expect((await request(port, '/healthz')).status).toBe(200);
  }));
