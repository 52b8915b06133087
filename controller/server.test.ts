import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createLogger } from '../lib/logger.ts';
import { DEFAULT_AGENT_TIMEOUT_MS } from './config.ts';
import { ControllerFileStore } from './file-store.ts';
import { createIdentity, loadIdentity } from '../lib/remoting/identity.ts';
import { startController, type RunningController } from './start.ts';
import { MEDIA_TYPE } from '../lib/api-client.ts';
import { OpenApi } from './openapi.ts';
import { newSecretToken } from './tokens.ts';

/** The HTTP pipeline of a real controller on port 0 (in-process), for the paths the e2e tests do not take. */
let controller: RunningController;
let token: string;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-ctl-server-'));
  const store = new ControllerFileStore(dir);
  const account = newSecretToken('svca');
  token = account.token;
  await store.createAccount({ id: account.id, email: 'a@example.com', tokenHash: account.hash, createdAt: '' });
  const file = createIdentity('t');
  const path = join(dir, 'id.json');
  writeFileSync(path, JSON.stringify(file));
  chmodSync(path, 0o600);
  const loaded = loadIdentity(path, file.zId);
  if (!loaded.ok) throw new Error('the identity just written does not load');
  const identity = loaded.value;
  controller = await startController({
    settings: { listen: { host: '127.0.0.1', port: 0 }, maxBodyBytes: 2048, agentTimeoutMs: DEFAULT_AGENT_TIMEOUT_MS },
    agentController: { zId: file.zId, identityPath: path, identity },
    store,
    logger: createLogger('test', { level: 'silent' }),
  });
});

afterAll(() => controller?.close());

function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  chunks: string[] = [],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: controller.port, path, method, headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    for (const c of chunks) req.write(c);
    req.end();
  });
}

const ok = { 'content-type': MEDIA_TYPE };
const openapi = new OpenApi();
/** Every error body here has the document's Error shape (checked through an operation that documents 404 with it). */
const errorOf = (reply: { body: string }) => {
  const body = JSON.parse(reply.body) as unknown;
  expect(openapi.validateResponse('/agent/unshare', 404, body)).toEqual([]);
  return body;
};

describe('controller HTTP pipeline', () => {
  it('unknown paths are 404 not_found and other methods 405, as JSON errors', async () => {
    const missing = await raw('POST', '/api/v1/nope', { ...ok, 'x-token': token }, ['{}']);
    expect(missing.status).toBe(404);
    expect(errorOf(missing)).toMatchObject({ code: 'not_found' });
    const get = await raw('GET', '/api/v1/agent/status', {});
    expect(get.status).toBe(405);
    expect(errorOf(get)).toMatchObject({ code: 'method_not_allowed' });
  });

  it('accepts the media type with charset=utf-8 and refuses other parameters', async () => {
    const body = JSON.stringify({ description: 'x' });
    const utf8 = await raw(
      'POST',
      '/api/v1/environment/enable',
      { 'content-type': `${MEDIA_TYPE}; charset=UTF-8`, 'x-token': token },
      [body],
    );
    expect(utf8.status).toBe(200);
    expect(openapi.validateResponse('/environment/enable', 200, JSON.parse(utf8.body))).toEqual([]);
    const latin = await raw(
      'POST',
      '/api/v1/environment/enable',
      { 'content-type': `${MEDIA_TYPE}; charset=latin1`, 'x-token': token },
      [body],
    );
    expect(latin.status).toBe(415);
    expect(errorOf(latin)).toMatchObject({ code: 'unsupported_media_type' });
  });

  it('checks the token before reading the body, and limits a chunked body without Content-Length', async () => {
    expect((await raw('POST', '/api/v1/environment/enable', ok, ['x'.repeat(5000)])).status).toBe(401);
    const chunked = await raw(
      'POST',
      '/api/v1/environment/enable',
      { ...ok, 'x-token': token, 'transfer-encoding': 'chunked' },
      ['{"description":"', 'x'.repeat(3000), '"}'],
    );
    expect(chunked.status).toBe(413);
    expect(errorOf(chunked)).toMatchObject({ code: 'body_too_large' });
  });

  it('a JSON body that is not an object is 400 malformed_json', async () => {
    const reply = await raw('POST', '/api/v1/environment/enable', { ...ok, 'x-token': token }, ['[1,2]']);
    expect(reply.status).toBe(400);
    expect(JSON.parse(reply.body)).toEqual({
      code: 'malformed_json',
      message: 'the request body must be a JSON object',
    });
  });

  it('refuses a remoting connection without a valid enrollment token before upgrading', async () => {
    const url = controller.apiUrl.replace('http:', 'ws:') + '/agent/remoting';
    for (const headers of [{}, { 'x-enrollment-token': `svce_aaaaaaaaaaaa_${'A'.repeat(43)}` }]) {
      const status = await new Promise<number>((resolve) => {
        const ws = new WebSocket(url, { headers });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => resolve(101));
        ws.on('error', () => undefined);
      });
      expect(status).toBe(401);
    }
  });
});
