/**
 * The requests/s floor of `bench:tunnel`: one hop of a plain Node reverse proxy, run in its own
 * process (bench/lib/run-module.ts), with none of svc's code. One hop in front of the backend is
 * what one Node process in the path costs (the shape of `svc serve`); a hop that sends each
 * request as an HTTP/2 stream on one session to a second hop, which forwards it to the backend, is
 * the tunnel's shape (installation, agent). Made as lean as plain Node allows, since a floor is only
 * a floor when nothing cheaper is in reach: heads parsed off the socket, only what HTTP needs carried
 * (method, path and host in; status, Content-Length and Content-Type out), responses relayed as the
 * backend framed them where the protocol does not change. It serves the benchmark's small GETs:
 * requests without a body, responses framed by Content-Length and read whole before they are
 * passed on.
 */
import { STATUS_CODES, createServer as createHttpServer } from 'node:http';
import http2 from 'node:http2';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** How a hop takes requests and where it sends them (`next`: the backend's port, or the next hop's). */
export interface HttpFloorHop {
  /** HTTP/1.1 parsed off the socket, HTTP/1.1 through node:http's server, or HTTP/2 streams. */
  readonly inbound: 'raw' | 'node-http' | 'h2';
  /** The backend over kept-alive HTTP/1.1 connections, or streams on one HTTP/2 session. */
  readonly outbound: 'pool' | 'h2';
  readonly next: number;
}

/** A response as the hop received it: its bytes as they came (HTTP/1.1 only) and its parts. */
interface Reply {
  readonly raw: Buffer | undefined;
  readonly status: number;
  readonly type: string | undefined;
  readonly body: Buffer;
}
type Forward = (method: string, path: string, host: string, done: (reply: Reply) => void) => void;

const CRLF2 = Buffer.from('\r\n\r\n');
const HEADER = (name: string) => new RegExp(`\\r\\n${name}:[ \\t]*([^\\r]*)`, 'i');
const CONTENT_LENGTH = HEADER('content-length');
const CONTENT_TYPE = HEADER('content-type');
const HOST = HEADER('host');

/** Kept-alive HTTP/1.1 connections to the backend, one request at a time each, the last used first. */
function poolForward(port: number): Forward {
  const idle: Socket[] = [];
  const open = (): Socket =>
    connect({ host: '127.0.0.1', port, noDelay: true })
      .on('error', () => undefined)
      .on('close', function (this: Socket) {
        if (idle.includes(this)) idle.splice(idle.indexOf(this), 1);
      });
  return (method, path, host, done) => {
    const socket = idle.pop() ?? open();
    let got: Buffer | undefined;
    const onData = (chunk: Buffer): void => {
      got = got ? Buffer.concat([got, chunk]) : chunk;
      const end = got.indexOf(CRLF2);
      if (end < 0) return;
      const head = got.toString('latin1', 0, end);
      const length = end + 4 + Number(CONTENT_LENGTH.exec(head)?.[1] ?? 0);
      if (got.length < length) return;
      socket.off('data', onData);
      idle.push(socket);
      const raw = got.subarray(0, length);
      done({ raw, status: Number(head.slice(9, 12)), type: CONTENT_TYPE.exec(head)?.[1], body: raw.subarray(end + 4) });
    };
    socket.on('data', onData);
    socket.write(`${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n\r\n`, 'latin1');
  };
}

/** Each request a stream on one HTTP/2 session to the next hop, ended by its HEADERS frame. */
async function h2Forward(port: number): Promise<Forward> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  await new Promise((resolve) => session.once('remoteSettings', resolve));
  return (method, path, host, done) => {
    const stream = session.request({ ':method': method, ':path': path, ':authority': host }, { endStream: true });
    let status = 0;
    let type: string | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      type = headers['content-type'];
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => done({ raw: undefined, status, type, body: Buffer.concat(chunks) }));
  };
}

/** An HTTP/1.1 head for a reply that came over HTTP/2. */
function responseHead(reply: Reply): string {
  const type = reply.type === undefined ? '' : `content-type: ${reply.type}\r\n`;
  return `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ''}\r\n${type}content-length: ${reply.body.length}\r\n\r\n`;
}

/** HTTP/1.1 read off the socket: one request at a time, its head split at the first line's spaces. */
function rawServer(forward: Forward): Server {
  return createServer({ noDelay: true }, (socket) => {
    let buffered: Buffer | undefined;
    let busy = false;
    const next = (): void => {
      const end = busy || !buffered ? -1 : buffered.indexOf(CRLF2);
      if (!buffered || end < 0) return;
      const head = buffered.toString('latin1', 0, end);
      buffered = buffered.length > end + 4 ? buffered.subarray(end + 4) : undefined;
      busy = true;
      const space = head.indexOf(' ');
      const path = head.slice(space + 1, head.indexOf(' ', space + 1));
      forward(head.slice(0, space), path, HOST.exec(head)?.[1] ?? '', (reply) => {
        if (reply.raw) socket.write(reply.raw);
        else {
          socket.cork();
          socket.write(responseHead(reply), 'latin1');
          socket.write(reply.body);
          socket.uncork();
        }
        busy = false;
        next();
      });
    };
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      buffered = buffered ? Buffer.concat([buffered, chunk]) : chunk;
      next();
    });
  });
}

/** Starts one hop on 127.0.0.1 port 0: its port and pid (the bench reads its CPU). */
export async function startHttpFloorHop(hop: HttpFloorHop): Promise<{ port: number; pid: number; close(): void }> {
  const forward = hop.outbound === 'h2' ? await h2Forward(hop.next) : poolForward(hop.next);
  let server: Server | http2.Http2Server;
  if (hop.inbound === 'raw') server = rawServer(forward);
  else if (hop.inbound === 'node-http') {
    server = createHttpServer({ keepAliveTimeout: 65_000 }, (req, res) =>
      forward(req.method ?? 'GET', req.url ?? '/', req.headers.host ?? '', (reply) => {
        res.writeHead(reply.status, ['content-type', reply.type ?? '', 'content-length', String(reply.body.length)]);
        res.end(reply.body);
      }),
    );
  } else {
    server = http2.createServer().on('stream', (stream, headers) =>
      forward(headers[':method'] ?? 'GET', headers[':path'] ?? '/', headers[':authority'] ?? '', (reply) => {
        const type = reply.type === undefined ? {} : { 'content-type': reply.type };
        stream.respond({ ':status': reply.status, 'content-length': reply.body.length, ...type });
        stream.end(reply.body);
      }),
    );
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, pid: process.pid, close: () => server.close() };
}
