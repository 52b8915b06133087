import { Agent, request, type OutgoingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedExchange } from '../../agent/inspector/record.ts';
import { shareRecorder } from '../../agent/inspector/recorder.ts';
import { InspectorStore } from '../../agent/inspector/store.ts';
import { createLogger } from '../../lib/logger.ts';
import { staticShares } from '../../lib/share/source.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { testFrontendConfig, UNREACHABLE_IDP1 } from '../support/frontend.ts';
import { startForgetfulBackend } from '../support/forgetful-backend.ts';
import { startScriptedBackend, ok, type ScriptedAnswer, type ScriptedBackend } from '../support/scripted-backend.ts';
import { mintSessionCookie } from '../support/session.ts';

/**
 * The request inspector on the frontend's fast path (sidecar/fast-path/recording.ts): a request the
 * fast path takes is recorded exactly as the same request sent through Node's HTTP server and
 * client (the proxy path, lib/http-pipe.ts), which a visitor's `Connection: close` picks. The
 * backend writes raw bytes, so each framing is the one named.
 */
const BINARY = Buffer.from([0, 1, 2, 254, 255, 10, 13, 0x80]).toString('latin1');
const ANSWERS: Record<string, ScriptedAnswer> = {
  '/headers': {
    bytes: ok(
      'headers',
      'Content-Type: text/plain\r\nX-Spaced:   padded value  \r\nSet-Cookie: svc-auth-session=forged; Path=/\r\n' +
        'Set-Cookie: app=1; Path=/\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n',
    ),
  },
  '/long': { bytes: ok('a body longer than the sixteen bytes kept', 'content-type: application/json\r\n') },
  '/binary': { bytes: ok(BINARY, 'content-type: application/octet-stream\r\n') },
  '/chunked': {
    bytes:
      'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n' +
      '7;ext=1\r\nhello, \r\n8\r\nchunked \r\n5\r\nworld\r\n0\r\nx-trailer: t\r\n\r\n',
  },
  '/close': { bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end', close: true },
  '/head': { bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 12\r\n\r\n' },
  '/etag': { bytes: 'HTTP/1.1 304 Not Modified\r\netag: "v1"\r\n\r\n' },
  '/hints': { bytes: `HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n${ok('after hints')}` },
  '/abort': {
    bytes: 'HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\nonly ten b',
    close: true,
  },
};

interface Reply {
  readonly status: number;
  readonly body: string;
}

/**
 * One request on a connection of its own: kept alive (the fast path takes it) or with
 * `Connection: close` (Node's server and client carry it). A cut-off response resolves with what arrived.
 */
function send(
  port: number,
  host: string,
  method: string,
  path: string,
  fast: boolean,
  headers: OutgoingHttpHeaders = {},
): Promise<Reply> {
  return new Promise((resolve) => {
    const agent = new Agent({ keepAlive: fast });
    const all = { ...headers, host, ...(fast ? {} : { connection: 'close' }) };
    const req = request({ host: '127.0.0.1', port, method, path, headers: all, agent }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (c: string) => (body += c));
      res.on('close', () => {
        agent.destroy();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', () => {
      agent.destroy();
      resolve({ status: 0, body: '' });
    });
    req.end();
  });
}

/** The next record `store` keeps. */
function nextRecord(store: InspectorStore): Promise<RecordedExchange> {
  return new Promise((resolve) => {
    const stop = store.subscribe((record) => {
      stop();
      resolve(record);
    });
  });
}

/** A record without what differs between any two requests (its id, time and duration). */
function comparable(record: RecordedExchange): Omit<RecordedExchange, 'id' | 'at' | 'durationMs'> {
  const { id: _id, at: _at, durationMs: _duration, ...rest } = record;
  return rest;
}

describe('the request inspector on the fast path', () => {
  const store = new InspectorStore({ requests: 100, bodyBytes: 16, memoryBytes: 1 << 20 });
  const noBodies = new InspectorStore({ requests: 10, bodyBytes: 0, memoryBytes: 1 << 20 });
  let backend: ScriptedBackend;
  let pooledBackend: ScriptedBackend;
  let forgetful: Awaited<ReturnType<typeof startForgetfulBackend>>;
  let frontend: RunningFrontend;
  const host = (token: string): string => `${token}.svc.localhost:${frontend.port}`;
  const fastCount = (): number => frontend.metrics.fastPathRequests.values()[0]?.value ?? 0;

  beforeAll(async () => {
    backend = await startScriptedBackend((r) => ANSWERS[r.path.split('?')[0] as string] ?? { bytes: ok('unknown') });
    pooledBackend = await startScriptedBackend((r) => ({ bytes: ok(`for ${r.path}`, 'content-type: text/plain\r\n') }));
    forgetful = await startForgetfulBackend();
    const config = testFrontendConfig({
      providers: [UNREACHABLE_IDP1],
      shares: [
        { token: 'rec', target: backend.url.href },
        { token: 'nobody', target: backend.url.href },
        { token: 'pooled', target: pooledBackend.url.href, oauth_provider: 'google' },
        { token: 'forgetful', target: `http://127.0.0.1:${forgetful.port}` },
      ],
    });
    const stores: Record<string, InspectorStore> = { rec: store, nobody: noBodies, pooled: store, forgetful: store };
    const shares = config.shares.map((share) => ({
      ...share,
      recorder: shareRecorder(share.token, stores[share.token] as InspectorStore, config.oauth.cookieName),
    }));
    frontend = await startFrontend({
      listen: { host: '127.0.0.1', port: 0 },
      endpointUrl: (port) => new URL(`http://auth.svc.localhost:${port}`),
      domain: config.oauth.cookieDomain,
      oauth: config.oauth,
      shares: staticShares(shares),
      logger: createLogger('inspector-fast-path-test', { level: 'silent' }),
    });
  });
  afterAll(async () => {
    await frontend.close();
    await backend.close();
    await pooledBackend.close();
    forgetful.server.close();
  });

  /** The same request on both paths: the visitor's replies and the two records, after checking which path took each. */
  async function onBothPaths(method: string, path: string, headers: OutgoingHttpHeaders = {}) {
    const records: RecordedExchange[] = [];
    const replies: Reply[] = [];
    for (const fast of [true, false]) {
      const before = fastCount();
      const recorded = nextRecord(store);
      replies.push(await send(frontend.port, host('rec'), method, path, fast, headers));
      records.push(await recorded);
      expect(fastCount() - before, fast ? 'taken by the fast path' : 'left to Node').toBe(fast ? 1 : 0);
    }
    const [fast, slow] = records as [RecordedExchange, RecordedExchange];
    expect(comparable(fast)).toEqual(comparable(slow));
    return { fast, replies };
  }

  it('records headers as the proxy path does: identity, secrets redacted, values trimmed', async () => {
    const { fast } = await onBothPaths('GET', '/headers?q=1', { authorization: 'Bearer visitor-secret', 'x-app': 'v' });
    expect(fast).toMatchObject({ method: 'GET', path: '/headers?q=1', status: 200 });
    expect(fast.requestHeaders).toContainEqual(['authorization', '[redacted by svc]']);
    expect(fast.requestHeaders).toContainEqual(['x-app', 'v']);
    expect(fast.requestHeaders[0]).toEqual(['host', backend.url.host]);
    expect(fast.responseHeaders).toContainEqual(['x-spaced', 'padded value']);
    expect(fast.responseHeaders).toContainEqual(['set-cookie', '[redacted by svc]']);
    expect(fast.responseHeaders).toContainEqual(['set-cookie', 'app=1; Path=/']);
    expect(fast.responseHeaders).toContainEqual(['keep-alive', 'timeout=5']);
    expect(JSON.stringify(fast)).not.toMatch(/visitor-secret|forged/);
  });

  it('keeps bodies up to the limit: text cut, binary as size, chunked without its framing', async () => {
    const long = (await onBothPaths('GET', '/long')).fast.responseBody;
    expect({ ...long, kept: long.kept.toString() }).toEqual({
      size: 41,
      kept: 'a body longer th',
      truncated: true,
      text: true,
    });
    const binary = (await onBothPaths('GET', '/binary')).fast.responseBody;
    expect(binary).toMatchObject({ size: 8, text: false, truncated: false });
    const chunked = await onBothPaths('GET', '/chunked');
    expect(chunked.replies.map((r) => r.body)).toEqual(['hello, chunked world', 'hello, chunked world']);
    expect(chunked.fast.responseBody).toMatchObject({ size: 20, truncated: true, text: true });
    expect(chunked.fast.responseBody.kept.toString()).toBe('hello, chunked w');
  });

  it('records close-delimited responses, HEAD, 304 and an interim response the same', async () => {
    const close = await onBothPaths('GET', '/close');
    expect(close.replies.map((r) => r.body)).toEqual(['until the end', 'until the end']);
    expect(close.fast.responseBody.kept.toString()).toBe('until the end');
    const head = await onBothPaths('HEAD', '/head');
    expect(head.fast).toMatchObject({ method: 'HEAD', status: 200, responseBody: { size: 0 } });
    const etag = await onBothPaths('GET', '/etag');
    expect(etag.fast).toMatchObject({ status: 304, responseHeaders: [['etag', '"v1"']] });
    const hints = await onBothPaths('GET', '/hints');
    expect(hints.fast.status).toBe(200);
    expect(hints.fast.responseBody.kept.toString()).toBe('after hints');
  });

  it('records a response the backend cuts off with what arrived', async () => {
    const { fast, replies } = await onBothPaths('GET', '/abort');
    expect(replies.map((r) => r.body)).toEqual(['only ten b', 'only ten b']);
    expect(fast.status).toBe(200);
    expect(fast.responseBody).toMatchObject({ size: 10, truncated: false });
  });

  it('copies no body byte when the limit is 0, and still counts the size', async () => {
    const recorded = nextRecord(noBodies);
    const before = fastCount();
    expect((await send(frontend.port, host('nobody'), 'GET', '/chunked', true)).body).toBe('hello, chunked world');
    expect(fastCount() - before).toBe(1);
    const record = await recorded;
    expect(record.responseBody).toMatchObject({ size: 20, truncated: true });
    expect(record.responseBody.kept.length).toBe(0);
  });

  it('records each visitor its own exchange on a backend connection they share', async () => {
    const visitors = [
      { email: 'alice@example.com', path: '/from-alice' },
      { email: 'bob@example.com', path: '/from-bob' },
    ];
    const before = fastCount();
    const records: RecordedExchange[] = [];
    for (const { email, path } of visitors) {
      const session = mintSessionCookie({ share: 'pooled', provider: 'google', email });
      const recorded = nextRecord(store);
      const reply = await send(frontend.port, host('pooled'), 'GET', path, true, { cookie: `${session}; theme=dark` });
      expect(reply).toEqual({ status: 200, body: `for ${path}` });
      records.push(await recorded);
    }
    expect(fastCount() - before).toBe(2);
    // One backend connection carried both requests.
    expect(pooledBackend.open()).toBe(1);
    expect(pooledBackend.seen).toHaveLength(2);
    expect(records.map((r) => [r.path, r.identity?.email, r.responseBody.kept.toString()])).toEqual([
      ['/from-alice', 'alice@example.com', 'for /from-alice'],
      ['/from-bob', 'bob@example.com', 'for /from-bob'],
    ]);
    for (const record of records) {
      expect(record.identity?.provider).toBe('google');
      expect(record.requestHeaders).toContainEqual(['cookie', 'theme=dark']);
      expect(JSON.stringify(record)).not.toContain('svc-auth-session');
    }
  });

  it('records a request sent again on a new backend connection once, with the answer it got', async () => {
    const before = fastCount();
    const records: RecordedExchange[] = [];
    for (const path of ['/first', '/second']) {
      const recorded = nextRecord(store);
      expect(await send(frontend.port, host('forgetful'), 'GET', path, true)).toEqual({
        status: 200,
        body: 'answered!',
      });
      records.push(await recorded);
    }
    expect(fastCount() - before).toBe(2);
    expect(records.map((r) => [r.path, r.status, r.responseBody.kept.toString()])).toEqual([
      ['/first', 200, 'answered!'],
      ['/second', 200, 'answered!'],
    ]);
    expect(store.list('forgetful')).toHaveLength(2);
  });
});
