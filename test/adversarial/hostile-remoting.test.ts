import { createPrivateKey } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { RemotingHub } from '../../controller/remoting-hub.ts';
import { newSecretToken } from '../../controller/tokens.ts';
import { createLogger } from '../../lib/logger.ts';
import { createServer } from '../../lib/node-http.ts';
import type { Server } from 'node:http';
import { createIdentity, type ControllerIdentity } from '../../lib/remoting/identity.ts';
import { CLOSE_PROTOCOL, ENROLLMENT_HEADER, REMOTING_PATH } from '../../lib/remoting/protocol.ts';
import { suiteFigures } from '../support/figures.ts';
import { uncaughtErrors } from '../support/uncaught.ts';

/**
 * An enrolled agent is its account's own code: a hand-written one sends the controller's remoting
 * channel messages that are valid JSON but no object. Reading `type` off `null` threw out of the
 * WebSocket's message handler, which ended the controller with every other account's API and
 * agents. Each such message closes that agent's connection (1002) and the controller goes on.
 */
const figures = suiteFigures('hostile-remoting');
const messages = figures.attackClass(
  "An enrolled agent's remoting messages that are JSON but no object (null, numbers, strings, lists)",
  'the controller exited on `null` (a TypeError in the message handler): the connection is closed with 1002 now',
);
const uncaught = uncaughtErrors();

const NOT_OBJECTS = ['null', '1', '"hello"', '[]', 'true'];
const ENV = 'eeeeeeeeeeee';
let store: ControllerFileStore;
let hub: RemotingHub;
let server: Server;
const enrollment = newSecretToken('svce');

beforeAll(async () => {
  store = new ControllerFileStore(mkdtempSync(join(tmpdir(), 'hostile-remoting-')));
  const file = createIdentity('main');
  const identity: ControllerIdentity = {
    zId: file.zId,
    publicKey: file.publicKey,
    privateKey: createPrivateKey(file.privateKey),
  };
  const account = newSecretToken('svca');
  const createdAt = new Date().toISOString();
  await store.createAccount({ id: account.id, email: 'mallory@example.com', tokenHash: account.hash, createdAt });
  await store.createEnvironment({ envZId: ENV, accountId: account.id, description: 'x', host: 'h', createdAt });
  await store.createEnrollment({
    id: enrollment.id,
    envZId: ENV,
    tokenHash: enrollment.hash,
    controllerZId: file.zId,
    createdAt,
  });
  hub = new RemotingHub({
    store,
    identity,
    logger: createLogger('hostile-remoting', { level: 'silent' }),
    timeoutMs: 1000,
  });
  server = createServer();
  server.on('upgrade', (req, socket, head) => hub.handleUpgrade(req, socket, head));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  figures.write();
  hub?.close();
  await new Promise((resolve) => server?.close(resolve));
  await store?.close();
});

/** Sends `text` on a fresh enrolled connection; the close code the controller answered with. */
async function closeCodeAfter(text: string): Promise<number> {
  const { port } = server.address() as AddressInfo;
  const ws = new WebSocket(`ws://127.0.0.1:${port}${REMOTING_PATH}`, {
    headers: { [ENROLLMENT_HEADER]: enrollment.token },
  });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  ws.send(text);
  return closed;
}

it.each(NOT_OBJECTS)('%s: the connection is closed as a protocol error, the controller goes on', (text) =>
  messages.run(async () => {
    expect(await closeCodeAfter(text)).toBe(CLOSE_PROTOCOL);
    expect(uncaught).toEqual([]);
  }),
);
