import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SvcError } from '../../lib/errors.ts';
import { EMPTY_BODY, type RecordedExchange } from './record.ts';
import { replay } from './replay.ts';

const RECORD: RecordedExchange = {
  id: 1,
  share: 'abc',
  at: 0,
  method: 'GET',
  path: '/orders?id=7',
  status: 200,
  durationMs: 1,
  requestHeaders: [['accept', 'text/plain']],
  responseHeaders: [],
  requestBody: EMPTY_BODY,
  responseBody: EMPTY_BODY,
  bytes: 0,
};

/** Edits the page can send that Node cannot put on the wire: each a 400 naming the field, nothing sent. */
describe('replay of an edited request', () => {
  let server: Server;
  let target: URL;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    target = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends a valid edit', async () => {
    const result = await replay(target, RECORD, { path: '/orders?id=8', headers: 'x-a: 1' }, 1024, undefined);
    expect(result.status).toBe(200);
    expect(seen).toContain('/orders?id=8');
  });

  it.each([
    ['path', { path: '/a b' }],
    ['path', { path: '/a\r\nx-injected: 1' }],
    ['path', { path: '/caf\u00e9' }],
    ['path', { path: 'relative' }],
    ['headers', { headers: 'x-a: one\rtwo' }],
    ['headers', { headers: 'x-a: \u0000' }],
    ['headers', { headers: 'no colon here' }],
  ])('refuses a bad %s: %j', async (field, edits) => {
    const before = seen.length;
    const outcome = await replay(target, RECORD, edits, 1024, undefined).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(outcome).toBeInstanceOf(SvcError);
    expect((outcome as SvcError).status).toBe(400);
    expect((outcome as SvcError).message).toMatch(new RegExp(`^${field}: `));
    expect(seen.length).toBe(before);
  });
});
