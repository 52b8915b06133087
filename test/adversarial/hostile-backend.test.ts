import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyBackend } from '../../agent/backends/proxy.ts';
import { listenHandler, type RunningListener } from '../../agent/backends/listener.ts';
import { createLogger } from '../../lib/logger.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { uncaughtErrors } from '../support/uncaught.ts';
import { UNREACHABLE_IDP1, startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { request } from '../support/raw-http.ts';
import { startScriptedBackend, type ScriptedBackend } from '../support/scripted-backend.ts';

/**
 * A share's backend belongs to whoever published the share: a hostile one answers with a status
 * line Node's client parses but Node's server refuses to write (a status below 100, a reason phrase
 * with control characters). `writeHead` throws on it inside the pipe's 'response' handler, which
 * would end the frontend's process with every other share in it (and the agent's, with its other
 * shares). Both answer 502 instead and go on serving.
 */
const HOSTILE_HEADS: Record<string, string> = {
  'status 000': 'HTTP/1.1 000 Zero\r\ncontent-length: 0\r\n\r\n',
  'status 099': 'HTTP/1.1 099 Early\r\ncontent-length: 0\r\n\r\n',
  'a control character in the reason phrase': 'HTTP/1.1 200 O\x01K\r\ncontent-length: 2\r\n\r\nok',
  'a DEL in the reason phrase': 'HTTP/1.1 200 O\x7fK\r\ncontent-length: 2\r\n\r\nok',
};
const METHODS = ['GET', 'POST'] as const;

const figures = suiteFigures('hostile-backend');
const refused = figures.attackClass(
  "A share's backend answers a status line Node's server refuses to write (status 000/099, control characters in the reason)",
  'the frontend (or agent) exited on the uncaught writeHead error: 502 now',
);

const uncaught = uncaughtErrors();

let hostileHead = '';
let hostile: ScriptedBackend;
let healthy: EchoBackend;
let fe: TestFrontend;
let agentProxy: RunningListener;

beforeAll(async () => {
  hostile = await startScriptedBackend(() => ({ bytes: hostileHead, close: true }));
  healthy = await startEchoBackend();
  fe = await startTestFrontend({
    providers: [UNREACHABLE_IDP1],
    shares: [
      { token: 'hostile', target: hostile.url.href },
      { token: 'other', target: healthy.url.href },
    ],
  });
  const logger = createLogger('hostile-backend', { level: 'silent' });
  agentProxy = await listenHandler(proxyBackend({ target: hostile.url, logger }), { host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  figures.write();
  await agentProxy?.close();
  await fe?.close();
  await hostile?.close();
  await healthy?.close();
});

describe.each(Object.keys(HOSTILE_HEADS))("a share backend's %s", (name) => {
  beforeAll(() => {
    hostileHead = HOSTILE_HEADS[name] as string;
  });

  it.each(METHODS)('%s through the frontend: 502, and the other share is served', async (method) => {
    await refused.run(async () => {
      const reply = await request(fe.port, '/', {
        method,
        host: fe.host('hostile'),
        body: method === 'POST' ? 'x' : undefined,
        timeoutMs: 10_000,
      });
      expect(reply.status).toBe(502);
      expect(reply.body).toContain('Bad gateway');
      expect((await request(fe.port, '/', { host: fe.host('other') })).status).toBe(200);
      expect(uncaught).toEqual([]);
    });
  });

  it.each(METHODS)("%s through the agent's proxy backend: 502, and it goes on serving", async (method) => {
    await refused.run(async () => {
      const reply = await request(agentProxy.port, '/', {
        method,
        body: method === 'POST' ? 'x' : undefined,
        timeoutMs: 10_000,
      });
      expect(reply.status).toBe(502);
      expect(uncaught).toEqual([]);
    });
  });
});
