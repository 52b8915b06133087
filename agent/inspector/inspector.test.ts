import { createServer, request } from 'node:http';
import { connect, createServer as createH2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { ROUTE_HEADER } from '../../lib/tunnel/protocol.ts';
import { listenHandler } from '../backends/listener.ts';
import { proxyBackend } from '../backends/proxy.ts';
import { serveStream } from '../tunnel/serve-stream.ts';
import { REDACTED, redactHeaders, type RecordedExchange } from './record.ts';
import { shareRecorder } from './recorder.ts';
import { InspectorStore } from './store.ts';

/** A backend that sets one of svc's cookies and one of its own, and answers binary on /bin. */
const backend = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/bin') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return res.end(Buffer.alloc(5000, 0xff));
    }
    res.writeHead(200, {
      'content-type': 'text/plain',
      'set-cookie': ['svc-auth-session=sealed-session; Path=/', 'theirs=kept; Path=/'],
    });
    res.end('x'.repeat(3000));
  });
});

/** A proxy to the backend recording share `share` (the path of a private access), and how to stop it. */
interface RecordingFront {
  readonly url: URL;
  close(): Promise<void>;
}

async function startRecording(
  share: string,
  target: URL,
  store: InspectorStore,
  ownCookie: string | undefined,
): Promise<RecordingFront> {
  const logger = createLogger('inspector-test', { level: 'silent' });
  // `pass`: the identity headers as the OAuth frontend sets them, so the record's identity shows.
  const recorder = shareRecorder(share, store, ownCookie);
  const handler = proxyBackend({ target, logger, identityHeaders: 'pass', recorder });
  const listener = await listenHandler(handler, { host: '127.0.0.1', port: 0 });
  return { url: new URL(`http://127.0.0.1:${listener.port}/`), close: () => listener.close() };
}

function send(front: RecordingFront, path: string, headers: Record<string, string>, body = ''): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path.slice(1), front.url), { method: body ? 'POST' : 'GET', headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the request inspector', () => {
  let target: URL;
  beforeAll(async () => {
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    target = new URL(`http://127.0.0.1:${(backend.address() as AddressInfo).port}/`);
  });
  afterAll(() => backend.close());

  it('never records credentials or svc cookies, both ways', async () => {
    const store = new InspectorStore({ requests: 10, bodyBytes: 1024, memoryBytes: 1 << 20 });
    const front = await startRecording('s1', target, store, 'svc-auth-session');
    try {
      const status = await send(front, '/a?b=1', {
        authorization: 'Basic c2VjcmV0',
        'proxy-authorization': 'Bearer p-secret',
        'x-token': 'account-token',
        cookie: 'svc-auth-session=visitor-session; SVC-AUTH-SESSION-login=l; theirs=1',
        'svc-auth-email': 'ann@example.com',
        'svc-auth-provider': 'dev',
      });
      expect(status).toBe(200);
      const [r] = store.list('s1') as RecordedExchange[];
      const text = JSON.stringify(r, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString() : v));
      for (const secret of ['c2VjcmV0', 'p-secret', 'account-token', 'visitor-session', 'sealed-session', '=l;'])
        expect(text).not.toContain(secret);
      expect(r?.requestHeaders).toContainEqual([
        'cookie',
        `svc-auth-session=${REDACTED}; SVC-AUTH-SESSION-login=${REDACTED}; theirs=1`,
      ]);
      expect(r?.responseHeaders).toContainEqual(['set-cookie', REDACTED]);
      expect(r?.responseHeaders).toContainEqual(['set-cookie', 'theirs=kept; Path=/']);
      expect(r?.identity).toEqual({ email: 'ann@example.com', provider: 'dev' });
      expect(r?.path).toBe('/a?b=1');
      expect(r?.responseBody).toMatchObject({ size: 3000, truncated: true, text: true });
      expect(r?.responseBody.kept.length).toBe(1024);
    } finally {
      await front.close();
    }
  });

  it('redacts cookie names in any spelling a browser reads as svc’s', () => {
    const out = redactHeaders(
      ['Set-Cookie', '__Host-svc-auth-session=x', 'Cookie', '"svc-auth-session"=y'],
      'svc-auth-session',
    );
    expect(out).toEqual([
      ['set-cookie', REDACTED],
      ['cookie', `"svc-auth-session"=${REDACTED}`],
    ]);
  });

  it('keeps binary bodies as their size, and a request the backend never answered with status 0', async () => {
    const store = new InspectorStore({ requests: 10, bodyBytes: 1024, memoryBytes: 1 << 20 });
    const front = await startRecording('s1', target, store, undefined);
    const gone = new URL('http://127.0.0.1:1/');
    const dead = await startRecording('s2', gone, store, undefined);
    try {
      await send(front, '/bin', {});
      expect(store.list('s1')[0]?.responseBody).toMatchObject({ size: 5000, text: false });
      expect(store.list('s1')[0]?.responseBody.kept.length).toBe(1024);
      expect(await send(dead, '/nowhere', {}, 'payload')).toBe(502);
      await new Promise((r) => setTimeout(r, 50));
      const [unanswered] = store.list('s2');
      expect(unanswered).toMatchObject({ path: '/nowhere', status: 0, method: 'POST' });
      expect(unanswered?.requestBody.kept.toString()).toBe('payload');
    } finally {
      await front.close();
      await dead.close();
    }
  });

  it('records the requests the tunnel serves, as the frontend would', async () => {
    const store = new InspectorStore({ requests: 10, bodyBytes: 1024, memoryBytes: 1 << 20 });
    const recorder = shareRecorder('tun', store, 'svc-auth-session');
    const tunnel = createH2Server();
    tunnel.on('stream', (stream, headers) =>
      serveStream(stream, headers, (token) =>
        token === 'tun' ? { shareMode: 'public', backendUrl: target, recorder } : undefined,
      ),
    );
    await new Promise<void>((r) => tunnel.listen(0, '127.0.0.1', r));
    const session = connect(`http://127.0.0.1:${(tunnel.address() as AddressInfo).port}`);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({
          ':method': 'POST',
          ':path': '/t?x=1',
          ':authority': 'tun.example.test',
          [ROUTE_HEADER]: 'public',
          'x-token': 'tunnel-secret',
          'content-type': 'text/plain',
        });
        let code = 0;
        stream.on('response', (h) => (code = Number(h[':status'])));
        stream.on('error', reject);
        stream.resume();
        stream.on('close', () => resolve(code));
        stream.end('hello backend');
      });
      expect(status).toBe(200);
      await new Promise((r) => setTimeout(r, 50));
      const [r] = store.list('tun');
      expect(r).toMatchObject({ method: 'POST', path: '/t?x=1', status: 200 });
      expect(r?.requestHeaders).toContainEqual(['x-token', REDACTED]);
      expect(r?.requestBody.kept.toString()).toBe('hello backend');
      expect(r?.responseHeaders).toContainEqual(['set-cookie', REDACTED]);
      expect(r?.responseBody).toMatchObject({ size: 3000, truncated: true, text: true });
    } finally {
      session.close();
      await new Promise((r) => tunnel.close(r));
    }
  });

  it('stays within its bounds: N per share and bytes across shares', async () => {
    const store = new InspectorStore({ requests: 3, bodyBytes: 2048, memoryBytes: 14_000 });
    const a = await startRecording('a', target, store, undefined);
    const b = await startRecording('b', target, store, undefined);
    try {
      for (let i = 0; i < 5; i++) await send(a, `/a${i}`, {}, 'y'.repeat(1500));
      expect(store.list('a').map((r) => r.path)).toEqual(['/a4', '/a3', '/a2']);
      for (let i = 0; i < 10; i++) {
        await send(b, `/b${i}`, {}, 'z'.repeat(1500));
        expect(store.bytes).toBeLessThanOrEqual(14_000);
      }
      // Each record holds ~4 kB (bodies 1.5 + 2 kB, headers): 14 kB keeps three, the oldest of either share went first.
      expect(store.list('a')).toHaveLength(0);
      expect(store.list('b').map((r) => r.path)).toEqual(['/b9', '/b8', '/b7']);
      store.forget('b');
      expect(store.bytes).toBe(0);
    } finally {
      await a.close();
      await b.close();
    }
  });
  it('bounds the bodies of recordings still in progress: many slow visitors hold at most memoryBytes', () => {
    const store = new InspectorStore({ requests: 100, bodyBytes: 16 * 1024, memoryBytes: 64 * 1024 });
    const record = shareRecorder('slow', store, undefined);
    const open = Array.from({ length: 20 }, (_, i) => record('POST', `/upload${i}`, ['content-type', 'text/plain']));
    for (const r of open) r.requestBody(Buffer.alloc(16 * 1024, 0x61));
    expect(store.bytesInFlight).toBeLessThanOrEqual(64 * 1024);
    for (const r of open) r.end();
    expect(store.bytesInFlight).toBe(0);
    const kept = store.list('slow').map((r) => r.requestBody);
    expect(kept.every((b) => b.size === 16 * 1024)).toBe(true);
    expect(kept.filter((b) => b.truncated).length).toBeGreaterThan(0);
    expect(store.bytes).toBeLessThanOrEqual(64 * 1024);
  });
});
