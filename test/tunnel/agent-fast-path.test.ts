import { createHash } from 'node:crypto';
import http2, {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  type Http2Server,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordedExchange } from '../../agent/inspector/record.ts';
import { shareRecorder } from '../../agent/inspector/recorder.ts';
import { InspectorStore } from '../../agent/inspector/store.ts';
import { serveStream, type TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { tunnelServer } from '../../lib/tunnel/http2.ts';
import { clientSettings, DEFAULT_TUNNEL_LIMITS, ROUTE_HEADER, STREAM_WINDOW_BYTES } from '../../lib/tunnel/protocol.ts';
import { until } from '../support/until.ts';

/**
 * The agent's fast path to its backends (agent/tunnel/backend-exchange.ts) against its `node:http`
 * path, differentially: the same streams go to two agents' HTTP/2 servers, one with the fast path
 * and one without, in front of the same raw backend. What the backend reads (the request heads,
 * byte for byte) and what the stream gets back (status, headers but Date, body, and whether it
 * ended or was reset) must be the same.
 */
const LARGE_BYTES = 48 * 1024 * 1024;
const LARGE_CHUNK = Buffer.alloc(64 * 1024, 'L');
const SETTLE_MS = 1_500;
/**
 * Between a backend and a visitor that stopped reading, only the stream window, the agent's
 * writable buffer and the kernel's buffers of the backend's connection (its sender's, up to
 * `tcp_wmem`'s maximum, and about 2 MiB on the receiving side; test/tunnel/backpressure.test.ts)
 * may hold bytes.
 */
const BOUND = STREAM_WINDOW_BYTES + maxSendBuffer() + 2 * 1024 * 1024 + 1024 * 1024;

function maxSendBuffer(): number {
  const [, , max] = readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/);
  return Number(max);
}

/** Raw responses by request path (the path after the target's `/base` prefix). */
const RESPONSES: Record<string, string> = {
  '/length':
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Type: text/html\r\nX-Multi: a\r\nx-multi: b\r\n' +
    'Set-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\nVary: accept\r\nVary: cookie\r\nX-Spaces:  v \t\r\n' +
    'X-Latin: caf\xe9\r\nConnection: X-Secret\r\nX-Secret: s\r\nKeep-Alive: timeout=5\r\nContent-Length: 5\r\n\r\nhello',
  '/zero': 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n',
  '/empty': 'HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n',
  '/not-modified': 'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\n\r\n',
  '/early':
    'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n' +
    'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate',
  '/http10': 'HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold',
  '/odd-status': 'HTTP/1.1 599 Whatever\r\nContent-Length: 2\r\n\r\nno',
  '/status-600': 'HTTP/1.1 600 Beyond\r\nContent-Length: 2\r\n\r\nno',
  '/two-lengths': 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
};

interface Backend {
  readonly server: net.Server;
  readonly port: number;
  /** Every request head read, in order. */
  readonly heads: string[];
  /** Per request path, the id of the connection it came on. */
  readonly connectionOf: Map<string, number>;
  /** Connections of `/hold` requests closed by the agent. */
  holdClosed: number;
  /** Bytes the `/large` response got into its socket. */
  largeWritten: number;
  /** The next request that comes on an already used connection is met with a close, unanswered. */
  closeNextReused: boolean;
  /** Its open connections (the agents' pools keep theirs). */
  readonly sockets: Set<net.Socket>;
}

function startBackend(): Promise<Backend> {
  let connections = 0;
  const backend = {
    heads: [] as string[],
    connectionOf: new Map<string, number>(),
    holdClosed: 0,
    largeWritten: 0,
    closeNextReused: false,
    sockets: new Set<net.Socket>(),
  } as Omit<Backend, 'server' | 'port'> & { server?: net.Server; port?: number };
  const server = net.createServer((socket) => {
    backend.sockets.add(socket);
    socket.on('close', () => backend.sockets.delete(socket));
    const id = ++connections;
    let served = 0;
    let pending = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        if (served++ > 0 && backend.closeNextReused) {
          backend.closeNextReused = false;
          return void socket.destroy();
        }
        backend.heads.push(head);
        const target = (head.split(' ')[1] ?? '').replace(/^\/base/, '');
        backend.connectionOf.set(target, id);
        answer(socket, target.split('?')[0] as string, backend);
      }
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(Object.assign(backend, { server, port: (server.address() as AddressInfo).port })),
    ),
  );
}

/**
 * Responses written in two steps: the first bytes, then 30 ms later the rest, or the backend's end
 * of the connection (`end`: a close-delimited body) or its hang-up mid-body (`cut`).
 */
const STAGED: Record<string, { readonly first: string; readonly then: string }> = {
  '/chunked': {
    first: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nfirst\r\n',
    then: '6\r\nsecond\r\n0\r\nX-Trailer: t\r\n\r\n',
  },
  '/until-close': { first: 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the backend closes', then: 'end' },
  '/truncated': { first: 'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789', then: 'cut' },
  '/chunk-cut': { first: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n', then: 'cut' },
};

function answer(socket: net.Socket, path: string, backend: Omit<Backend, 'server' | 'port'>): void {
  const fixed = RESPONSES[path];
  const staged = STAGED[path];
  if (fixed !== undefined) socket.write(fixed, 'latin1');
  else if (staged) {
    socket.write(staged.first, 'latin1');
    const { then } = staged;
    setTimeout(() => (then === 'cut' ? socket.destroy() : then === 'end' ? socket.end() : socket.write(then)), 30);
  } else if (path === '/hold') {
    socket.once('close', () => (backend.holdClosed += 1));
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789');
  } else if (path === '/large') writeLarge(socket, backend);
  else socket.destroy();
}

/** A body larger than every buffer between the backend and the visitor, written only as fast as the socket takes it. */
function writeLarge(socket: net.Socket, backend: Omit<Backend, 'server' | 'port'>): void {
  backend.largeWritten = 0;
  socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${LARGE_BYTES}\r\n\r\n`);
  const pump = (): void => {
    while (backend.largeWritten < LARGE_BYTES) {
      backend.largeWritten += LARGE_CHUNK.length;
      if (!socket.write(LARGE_CHUNK)) return void socket.once('drain', pump);
    }
  };
  pump();
}

/** What one stream got back. */
interface Answer {
  readonly status: number;
  readonly headers: [string, string | string[]][];
  readonly body: string;
  /** `complete` when the stream ended without an error code, else the code it was reset with. */
  readonly end: 'complete' | number;
  /** The request heads the backend read for it. */
  readonly sent: string[];
}

interface Agent {
  readonly server: Http2Server;
  readonly session: ClientHttp2Session;
}

let backend: Backend;
let downPort: number;
const store = new InspectorStore({ requests: 100, bodyBytes: 1024, memoryBytes: 1 << 20 });
const agents: Record<'fast' | 'node', Agent> = {} as Record<'fast' | 'node', Agent>;

function shares(path: 'fast' | 'node'): (token: string) => TunnelledShare | undefined {
  const recorder = shareRecorder(`recorded-${path}`, store, 'svc-auth-session');
  return (token) => {
    const backendUrl = new URL(`http://127.0.0.1:${token === 'down' ? downPort : backend.port}/base/`);
    if (token === 'app' || token === 'down') return { shareMode: 'public', backendUrl };
    if (token === 'priv') return { shareMode: 'private', backendUrl };
    if (token === 'recorded') return { shareMode: 'public', backendUrl, recorder };
    return undefined;
  };
}

async function startAgent(path: 'fast' | 'node'): Promise<Agent> {
  const server = tunnelServer(DEFAULT_TUNNEL_LIMITS);
  const resolve = shares(path);
  server.on('stream', (stream, headers) => serveStream(stream, headers, resolve, path === 'fast'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, {
    settings: clientSettings(DEFAULT_TUNNEL_LIMITS),
  });
  session.on('error', () => undefined);
  return { server, session };
}

/** A stream of `agent` to the public share `app`, ended by its HEADERS frame. */
function open(agent: Agent, path: string, extra: OutgoingHttpHeaders = {}): ClientHttp2Stream {
  const stream = agent.session.request(
    { ':method': 'GET', ':path': path, ':authority': 'app.tunnel.test', [ROUTE_HEADER]: 'public', ...extra },
    { endStream: true },
  );
  stream.on('error', () => undefined);
  return stream;
}

/** One stream of `agent` read to its end. */
function ask(agent: Agent, path: string, extra: OutgoingHttpHeaders = {}): Promise<Answer> {
  const sentFrom = backend.heads.length;
  const stream = open(agent, path, extra);
  return new Promise((resolve) => {
    let status = 0;
    let headers: [string, string | string[]][] = [];
    const body: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
      headers = Object.entries(h)
        .filter(([name]) => !name.startsWith(':') && name !== 'date')
        .map(([name, value]) => [name, value as string | string[]]);
    });
    stream.on('data', (chunk: Buffer) => body.push(chunk));
    stream.on('close', () =>
      resolve({
        status,
        headers,
        body: Buffer.concat(body).toString('latin1'),
        end: stream.rstCode === http2.constants.NGHTTP2_NO_ERROR ? 'complete' : (stream.rstCode ?? -1),
        sent: backend.heads.slice(sentFrom),
      }),
    );
  });
}

/** The same stream through the `node:http` path, then the fast path. */
async function both(path: string, extra: OutgoingHttpHeaders = {}): Promise<{ node: Answer; fast: Answer }> {
  const node = await ask(agents.node, path, extra);
  const fast = await ask(agents.fast, path, extra);
  return { node, fast };
}

beforeAll(async () => {
  backend = await startBackend();
  downPort = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  agents.fast = await startAgent('fast');
  agents.node = await startAgent('node');
});

afterAll(async () => {
  for (const agent of Object.values(agents)) {
    agent.session.destroy();
    await new Promise((r) => agent.server.close(r));
  }
  for (const socket of backend.sockets) socket.destroy();
  await new Promise((r) => backend.server.close(r));
});

describe("the agent's fast path to its backend, against node:http", () => {
  it.each([
    ['a Content-Length body, repeated and hop-by-hop headers', '/length'],
    ['a chunked body in two reads, with an extension and a trailer', '/chunked'],
    ['a close-delimited body', '/until-close'],
    ['an empty Content-Length body', '/zero'],
    ['204', '/empty'],
    ['304', '/not-modified'],
    ['100 and 103 before the final response', '/early'],
    ['an HTTP/1.0 response', '/http10'],
    ['an unknown status', '/odd-status'],
    ['a status HTTP/2 cannot carry (502)', '/status-600'],
    ['a query string', '/length?q=1&r=%20'],
  ])('sends and answers %s alike', async (_name, path) => {
    const { node, fast } = await both(path);
    expect(fast).toEqual(node);
    expect(fast.end).toBe('complete');
    expect(fast.sent).toHaveLength(1);
  });

  it('answers HEAD alike: the head of a Content-Length response, no body', async () => {
    const { node, fast } = await both('/length', { ':method': 'HEAD' });
    expect(fast).toEqual(node);
    expect(fast).toMatchObject({ status: 200, body: '', end: 'complete' });
    expect(fast.headers).toContainEqual(['content-length', '5']);
  });

  it('sends the same head for other bodiless methods, repeated headers and an access stream', async () => {
    const cases: OutgoingHttpHeaders[] = [
      { ':method': 'POST' },
      { ':method': 'DELETE' },
      { ':method': 'OPTIONS' },
      { ':method': 'PUT', 'content-length': '0' },
      { 'x-multi': ['one', 'two'], cookie: ['a=1', 'b=2'], 'x-forwarded-for': '10.0.0.1', te: 'trailers' },
      {
        ':authority': 'priv.tunnel.test',
        [ROUTE_HEADER]: 'access',
        'svc-auth-email': 'mallory@example.com',
        svc_auth_provider: 'forged',
        'x-kept': 'yes',
      },
    ];
    for (const extra of cases) {
      const { node, fast } = await both('/length', extra);
      expect(fast, JSON.stringify(extra)).toEqual(node);
      expect(fast.status).toBe(200);
    }
    const access = await ask(agents.fast, '/length', cases[5]);
    expect(access.sent[0]).toContain('x-kept: yes');
    expect(access.sent[0]).not.toMatch(/svc.auth/i);
  });

  it('answers 502 with the same text when the backend is down', async () => {
    const { node, fast } = await both('/x', { ':authority': 'down.tunnel.test' });
    expect(fast).toEqual(node);
    expect(fast.status).toBe(502);
    expect(fast.body).toBe(`502: the share backend did not answer: connect ECONNREFUSED 127.0.0.1:${downPort}\n`);
  });

  it('resets the stream alike when the backend hangs up mid-body, with a length or chunked', async () => {
    for (const path of ['/truncated', '/chunk-cut']) {
      const { node, fast } = await both(path);
      expect(fast.status).toBe(node.status);
      expect(fast.headers).toEqual(node.headers);
      expect(fast.sent).toEqual(node.sent);
      expect(node.end).not.toBe('complete');
      expect(fast.end).toBe(node.end);
    }
  });

  it('answers 502 to a response neither path can frame (the reasons differ)', async () => {
    const { node, fast } = await both('/two-lengths');
    expect([node.status, fast.status]).toEqual([502, 502]);
    expect(fast.body).toBe('502: the share backend did not answer: backend response refused: bad Content-Length\n');
  });

  it('drops the backend connection when the visitor resets the stream mid-body', async () => {
    for (const agent of [agents.node, agents.fast]) {
      const closed = backend.holdClosed;
      const stream = open(agent, '/hold');
      stream.once('data', () => stream.close(http2.constants.NGHTTP2_CANCEL));
      await until(() => backend.holdClosed === closed + 1, 'the backend connection closed');
    }
  });

  it('holds a large body back for a visitor that stops reading, then delivers it whole', async () => {
    for (const agent of [agents.node, agents.fast]) {
      const stream = open(agent, '/large');
      const headers = await new Promise<IncomingHttpHeaders>((r) => stream.once('response', r));
      expect(headers[':status']).toBe(200);
      // Not read: the stream's window fills, then the agent's buffer, then the backend's socket.
      let seen = -1;
      await until(
        () => {
          const settled = backend.largeWritten === seen;
          seen = backend.largeWritten;
          return settled;
        },
        'the backend to stop writing',
        20_000,
        SETTLE_MS,
      );
      expect(backend.largeWritten).toBeLessThan(BOUND);
      const hash = createHash('sha256');
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        bytes += chunk.length;
      });
      await new Promise((r) => stream.on('close', r));
      expect(bytes).toBe(LARGE_BYTES);
      expect(hash.digest('hex')).toBe(createHash('sha256').update(Buffer.alloc(LARGE_BYTES, 'L')).digest('hex'));
      expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    }
  }, 60_000);

  it('sends sequential streams on one kept-alive connection', async () => {
    for (const path of ['node', 'fast'] as const) {
      await ask(agents[path], `/length?${path}-first`);
      await ask(agents[path], `/length?${path}-second`);
      const connection = (which: string) => backend.connectionOf.get(`/length?${path}-${which}`);
      expect(connection('second'), path).toBe(connection('first'));
    }
  });

  it('sends a GET again on a new connection when its kept-alive one was closed unread; not a POST', async () => {
    await ask(agents.fast, '/zero');
    backend.closeNextReused = true;
    const retried = await ask(agents.fast, '/length');
    expect(retried).toMatchObject({ status: 200, body: 'hello', end: 'complete' });
    await ask(agents.node, '/zero');
    backend.closeNextReused = true;
    // Node's client does not send it again: the node:http path answers 502.
    expect(await ask(agents.node, '/length')).toMatchObject({ status: 502 });
    for (const agent of [agents.node, agents.fast]) {
      await ask(agent, '/zero');
      backend.closeNextReused = true;
      const post = await ask(agent, '/length', { ':method': 'POST' });
      expect(post).toMatchObject({ status: 502, body: '502: the share backend did not answer: socket hang up\n' });
    }
  });

  it('records the exchange alike for the request inspector', async () => {
    for (const path of ['/length', '/chunked', '/empty']) {
      const { node, fast } = await both(path, { ':authority': 'recorded.tunnel.test', 'x-seen': 'yes' });
      expect(fast).toEqual(node);
    }
    const recorded = (path: 'fast' | 'node') => store.list(`recorded-${path}`);
    await until(() => recorded('fast').length === 3 && recorded('node').length === 3, 'three records of each');
    const comparable = (r: RecordedExchange) => ({ ...r, id: 0, share: '', at: 0, durationMs: 0 });
    expect(recorded('fast').map(comparable)).toEqual(recorded('node').map(comparable));
    const bodies = recorded('fast').map((r) => r.responseBody.kept.toString());
    expect(bodies.sort()).toEqual(['', 'firstsecond', 'hello']);
    expect(recorded('fast')[0]?.requestHeaders).toContainEqual(['x-seen', 'yes']);
  });
});
