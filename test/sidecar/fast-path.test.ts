import { Agent, createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestFrontend, UNREACHABLE_IDP1, type TestFrontend } from '../support/frontend.ts';
import { startForgetfulBackend } from '../support/forgetful-backend.ts';
import { mintSessionCookie } from '../support/session.ts';
import { until } from '../support/until.ts';

/**
 * The fast path (sidecar/fast-path/) against a real frontend, real backends and Node's own HTTP
 * client, whose parser checks every response the fast path relays. Each request goes over one
 * kept-alive connection unless said otherwise; the frontend's `svc_frontend_fast_path_requests_total`
 * tells which path took it.
 */
interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

interface Reply {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly reusedSocket: boolean;
}

/** A backend with a route per behaviour the fast path must frame: lengths, chunks, hints, close-delimited, silence, nonsense. */
function startBackend(): Promise<{ server: Server; port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    switch (req.url) {
      case '/chunked':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first,');
        setTimeout(() => res.end('second'), 20);
        return;
      case '/hints':
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        res.end('after hints');
        return;
      case '/until-close':
        req.socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the backend closes');
        return;
      case '/nonsense':
        req.socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok');
        return;
      case '/silent':
        return;
      case '/large':
        res.end(Buffer.alloc(4 * 1024 * 1024, 'x'));
        return;
      default:
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'backend-cookie=1; Path=/' });
        res.end(JSON.stringify({ method: req.method, url: req.url }));
    }
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port, seen })),
  );
}

/**
 * Writes `bytes` on a new connection (ending it when `end`, a half-close) and resolves everything
 * the frontend sent once it closes the connection.
 */
function untilClosed(port: number, bytes: string, end: boolean): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => (end ? socket.end(bytes) : socket.write(bytes)));
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

describe('the fast path', () => {
  let backend: Awaited<ReturnType<typeof startBackend>>;
  let forgetful: Awaited<ReturnType<typeof startForgetfulBackend>>;
  let fe: TestFrontend;
  const cookie = mintSessionCookie({ share: 'private', provider: 'google', email: 'alice@example.com' });

  beforeAll(async () => {
    backend = await startBackend();
    forgetful = await startForgetfulBackend();
    const down = await new Promise<number>((resolve) => {
      const probe = createTcpServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    fe = await startTestFrontend({
      providers: [UNREACHABLE_IDP1],
      shares: [
        { token: 'open', target: `http://127.0.0.1:${backend.port}` },
        { token: 'prefixed', target: `http://127.0.0.1:${backend.port}/app/` },
        { token: 'private', target: `http://127.0.0.1:${backend.port}`, oauth_provider: 'google' },
        { token: 'forgetful', target: `http://127.0.0.1:${forgetful.port}` },
        { token: 'down', target: `http://127.0.0.1:${down}` },
      ],
      limits: { backendTimeoutMs: 500 },
    });
  });
  afterAll(async () => {
    await fe?.close();
    backend?.server.closeAllConnections();
    await new Promise((resolve) => backend?.server.close(resolve));
    await new Promise((resolve) => forgetful?.server.close(resolve));
  });

  /** One request through Node's client over `agent` (one kept-alive connection). */
  function send(agent: Agent, token: string, path: string, headers: Record<string, string> = {}, method = 'GET') {
    return new Promise<Reply>((resolve, reject) => {
      const req = request(
        { host: '127.0.0.1', port: fe.port, path, method, agent, headers: { host: fe.host(token), ...headers } },
        (res) => {
          let body = '';
          res.setEncoding('latin1');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  async function fastPathCount(): Promise<number> {
    const text = await new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port: fe.frontend.metricsPort, path: '/metrics' }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve(body));
      })
        .on('error', reject)
        .end();
    });
    return Number(/^svc_frontend_fast_path_requests_total (\d+)$/m.exec(text)?.[1] ?? Number.NaN);
  }

  const oneConnection = () => new Agent({ keepAlive: true, maxSockets: 1 });

  it('forwards GETs on one connection with the session identity, none of the client’s, and the share’s path prefix', async () => {
    const agent = oneConnection();
    const before = await fastPathCount();
    const spoofs = ['svc-auth-email', 'SVC_AUTH_EMAIL', 'svc.auth.provider', 'X-Forwarded-Host'];
    const replies: Reply[] = [];
    for (const spoof of spoofs)
      replies.push(await send(agent, 'private', `/page?spoof=${spoof}`, { cookie, [spoof]: 'mallory@evil.example' }));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(replies.map((r) => r.reusedSocket)).toEqual([false, true, true, true]);
    expect(await fastPathCount()).toBe(before + spoofs.length);
    const seen = backend.seen.slice(-spoofs.length);
    for (const request of seen) {
      expect(request.headers['svc-auth-email']).toBe('alice@example.com');
      expect(request.headers['svc-auth-provider']).toBe('google');
      expect(request.headers['x-forwarded-host']).toBe(fe.host('private'));
      expect(request.headers['cookie']).toBeUndefined();
      const names = Object.keys(request.headers).map((n) => n.replace(/[_.]/g, '-'));
      expect(names.filter((n) => n.startsWith('svc-auth'))).toEqual([
        'svc-auth-provider',
        'svc-auth-email',
        'svc-auth-expires',
      ]);
    }
    // The backend's own headers reach the visitor; its connection headers do not.
    expect(replies[0]?.headers['set-cookie']).toEqual(['backend-cookie=1; Path=/']);
    expect(replies[0]?.headers['keep-alive']).toBeUndefined();
    expect((await send(agent, 'prefixed', '/x?y=1')).body).toBe('{"method":"GET","url":"/app/x?y=1"}');
    agent.destroy();
  });

  it('sends a visitor without a session to the login through Node’s server, on the same connection', async () => {
    const agent = oneConnection();
    expect((await send(agent, 'open', '/')).status).toBe(200);
    const login = await send(agent, 'private', '/');
    expect(login.status).toBe(302);
    expect(login.reusedSocket).toBe(true);
    expect(login.headers.location).toMatch(/\/google\/auth\/start\?ticket=private%7E/);
    expect((await send(agent, 'open', '/after')).status).toBe(200);
    agent.destroy();
  });

  it('answers pipelined requests in order when a POST hands the connection over mid-way', async () => {
    const before = await fastPathCount();
    const host = fe.host('open');
    const bytes =
      `GET /one HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
      `POST /two HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 5\r\n\r\nhello` +
      `GET /three HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    // Not ended by the client: Node's server ends a connection whose visitor half-closed at once.
    const text = await untilClosed(fe.port, bytes, false);
    const bodies = [...text.matchAll(/\{"method":"(\w+)","url":"([^"]+)"\}/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(bodies).toEqual(['GET /one', 'POST /two', 'GET /three']);
    expect(text.match(/^HTTP\/1\.1 200 OK/gm)).toHaveLength(3);
    expect(await fastPathCount()).toBe(before + 1);
  });

  it('abandons what a visitor asked for and closes when it half-closes, as Node’s server does', async () => {
    const host = fe.host('open');
    const bytes =
      `GET /first HTTP/1.1\r\nHost: ${host}\r\n\r\n` +
      `POST /second HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 2\r\n\r\nhi`;
    const text = await untilClosed(fe.port, bytes, true);
    // Node's server ends a connection whose visitor half-closed (its httpAllowHalfOpen is off)
    // without answering; the fast path does the same, so a visitor who hung up frees its backend
    // connection at once (an answer the backend sent before the end was read may still go out).
    // Either way the POST is not answered and the connection does not hang.
    expect(text.match(/^HTTP\/1\.1 /gm)?.length ?? 0).toBeLessThanOrEqual(1);
    expect(text).not.toContain('/second');
  });

  it('takes a head that arrives a byte per write, its end split across writes', async () => {
    const before = await fastPathCount();
    const bytes = `GET /bytewise HTTP/1.1\r\nHost: ${fe.host('open')}\r\n\r\n`;
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(fe.port, '127.0.0.1');
      socket.setNoDelay(true);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (received.includes('"url":"/bytewise"}')) {
          socket.destroy();
          resolve(received);
        }
      });
      socket.on('error', reject);
      let at = 0;
      const writeNext = (): void => {
        socket.write(bytes.charAt(at));
        at += 1;
        if (at < bytes.length) setTimeout(writeNext, 2);
      };
      socket.on('connect', writeNext);
    });
    expect(text).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(await fastPathCount()).toBe(before + 1);
  });

  it('relays chunked, hinted and close-delimited responses whole, and HEAD without a body', async () => {
    const agent = oneConnection();
    const chunked = await send(agent, 'open', '/chunked');
    expect([chunked.status, chunked.body, chunked.headers['transfer-encoding']]).toEqual([
      200,
      'first,second',
      'chunked',
    ]);
    const hinted = await send(agent, 'open', '/hints');
    expect([hinted.status, hinted.body, hinted.reusedSocket]).toEqual([200, 'after hints', true]);
    const head = await send(agent, 'open', '/', {}, 'HEAD');
    expect([head.status, head.body, head.headers['content-type']]).toEqual([200, '', 'application/json']);
    expect((await send(agent, 'open', '/after-head')).status).toBe(200);
    const untilClose = await send(agent, 'open', '/until-close');
    expect([untilClose.status, untilClose.body, untilClose.headers.connection]).toEqual([
      200,
      'until the backend closes',
      'close',
    ]);
    // That response ended the visitor's connection: the next request takes a new one.
    expect((await send(agent, 'open', '/')).reusedSocket).toBe(false);
    agent.destroy();
  });

  it('ends the connection after a close-delimited response, not serving what was pipelined behind it', async () => {
    const host = fe.host('open');
    const before = backend.seen.length;
    const text = await untilClosed(
      fe.port,
      `GET /until-close HTTP/1.1\r\nHost: ${host}\r\n\r\nGET /behind HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
      false,
    );
    expect(text.match(/^HTTP\/1\.1 /gm)).toHaveLength(1);
    expect(text).toMatch(/connection: close\r\n\r\nuntil the backend closes$/);
    // Time for a request sent on behind it to have reached the backend.
    await new Promise((r) => setTimeout(r, 200));
    expect(backend.seen.slice(before).map((r) => r.url)).toEqual(['/until-close']);
  });

  it('streams a large response to a visitor that reads slowly, whole', async () => {
    const received = await new Promise<number>((resolve, reject) => {
      const socket = connect(fe.port, '127.0.0.1', () =>
        socket.write(`GET /large HTTP/1.1\r\nHost: ${fe.host('open')}\r\nConnection: keep-alive\r\n\r\n`),
      );
      let bytes = 0;
      socket.pause();
      setTimeout(() => socket.resume(), 300);
      socket.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes >= 4 * 1024 * 1024) {
          socket.destroy();
          resolve(bytes);
        }
      });
      socket.on('error', reject);
    });
    expect(received).toBeGreaterThan(4 * 1024 * 1024);
  });

  it('gives the next visitor a backend connection that a slow reader had paused', async () => {
    // The whole response read slowly on one connection, which stays open...
    await new Promise<void>((resolve, reject) => {
      const socket = connect(fe.port, '127.0.0.1', () =>
        socket.write(`GET /large HTTP/1.1\r\nHost: ${fe.host('open')}\r\n\r\n`),
      );
      let bytes = 0;
      let headBytes = -1;
      socket.pause();
      setTimeout(() => socket.resume(), 300);
      socket.on('data', (chunk: Buffer) => {
        if (headBytes < 0) headBytes = chunk.indexOf('\r\n\r\n') + 4;
        bytes += chunk.length;
        if (bytes - headBytes >= 4 * 1024 * 1024) setTimeout(() => (socket.destroy(), resolve()), 50);
      });
      socket.on('error', reject);
    });
    // ...then its backend connection, back in the pool, serves the next request (not a 504).
    const agent = oneConnection();
    const reply = await send(agent, 'open', '/after-slow-reader');
    expect([reply.status, reply.body]).toEqual([200, '{"method":"GET","url":"/after-slow-reader"}']);
    agent.destroy();
  });

  it('sends a request again, once, on a new backend connection when a kept-alive one closes under it', async () => {
    const agent = oneConnection();
    const replies = [await send(agent, 'forgetful', '/'), await send(agent, 'forgetful', '/')];
    expect(replies.map((r) => [r.status, r.body])).toEqual([
      [200, 'answered!'],
      [200, 'answered!'],
    ]);
    agent.destroy();
  });

  it('answers 502 for a backend that is down or speaks nonsense, 504 for a silent one, and keeps the connection', async () => {
    const agent = oneConnection();
    const down = await send(agent, 'down', '/');
    expect([down.status, down.body.includes('Backend unreachable')]).toEqual([502, true]);
    const nonsense = await send(agent, 'open', '/nonsense');
    expect([nonsense.status, nonsense.reusedSocket]).toEqual([502, true]);
    const silent = await send(agent, 'open', '/silent');
    expect([silent.status, silent.body.includes('Backend timeout'), silent.reusedSocket]).toEqual([504, true, true]);
    expect((await send(agent, 'open', '/')).status).toBe(200);
    agent.destroy();
    expect(fe.logs.text).not.toContain('at-secret-value');
  });
  it('answers a HEAD whose backend fails with the page head only, and the connection serves the next request', async () => {
    const socket = connect(fe.port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `HEAD / HTTP/1.1\r\nhost: ${fe.host('down')}\r\n\r\nGET / HTTP/1.1\r\nhost: ${fe.host('open')}\r\n\r\n`,
    );
    await until(() => text.includes('HTTP/1.1 200 '), 'the second response');
    socket.destroy();
    const [first, rest] = [text.slice(0, text.indexOf('\r\n\r\n') + 4), text.slice(text.indexOf('\r\n\r\n') + 4)];
    expect(first).toMatch(/^HTTP\/1\.1 502 /);
    expect(first).toMatch(/content-length: [1-9]/i);
    expect(rest.startsWith('HTTP/1.1 200 ')).toBe(true);
  });
});
