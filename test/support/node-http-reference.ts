import { Agent, createServer, request, type Server } from 'node:http';
import {
  connect,
  createServer as createTcpServer,
  type AddressInfo,
  type Server as TcpServer,
  type Socket,
} from 'node:net';

/**
 * Node's own HTTP/1.1 parser (llhttp, through `node:http` with the options the frontend uses: the
 * defaults) as the reference the fast path's parsers are compared with: what Node's server reads
 * of raw request bytes, and what Node's client reads of raw response bytes.
 */

/** One request as Node's server read it. */
export interface NodeRequest {
  readonly method: string;
  readonly url: string;
  readonly version: string;
  /** Names lower-cased, as sent, in order. */
  readonly headers: readonly (readonly [string, string])[];
  readonly bodyLength: number;
  readonly keepAlive: boolean;
}

/** What Node's server made of one connection's bytes: its requests, then its error if it refused the rest. */
export interface NodeRequestVerdict {
  readonly requests: readonly NodeRequest[];
  readonly error?: string;
}

export interface RequestReference {
  /** Writes `bytes` (Latin-1) on a new connection, half-closes it, and resolves once the server closed it. */
  read(bytes: string): Promise<NodeRequestVerdict>;
  close(): Promise<void>;
}

/** A default `http.createServer` that records what it reads, per connection. */
export async function startRequestReference(): Promise<RequestReference> {
  const seen = new Map<number, { requests: NodeRequest[]; error?: string }>();
  const server: Server = createServer((req, res) => {
    let bodyLength = 0;
    req.on('data', (chunk: Buffer) => (bodyLength += chunk.length));
    req.on('end', () => {
      const headers: [string, string][] = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        headers.push([(req.rawHeaders[i] as string).toLowerCase(), req.rawHeaders[i + 1] as string]);
      seen.get(req.socket.remotePort ?? 0)?.requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        version: req.httpVersion,
        headers,
        bodyLength,
        keepAlive: res.shouldKeepAlive,
      });
      res.end();
    });
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    const verdict = seen.get(socket.remotePort ?? 0);
    // A half-closed connection after complete requests is no refusal.
    if (verdict && err.code !== 'HPE_CLOSED_CONNECTION') verdict.error = err.code ?? err.message;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    read: (bytes) =>
      new Promise((resolve, reject) => {
        let local = 0;
        const socket = connect(port, '127.0.0.1', () => {
          local = socket.localPort ?? 0;
          seen.set(local, { requests: [] });
          socket.end(bytes, 'latin1');
        });
        socket.resume();
        socket.on('error', () => undefined);
        socket.on('close', () => {
          const verdict = seen.get(local);
          seen.delete(local);
          if (verdict) resolve(verdict);
          else reject(new Error('the reference server never saw the connection'));
        });
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What Node's client made of a response. */
export type NodeResponseVerdict =
  | { readonly kind: 'refused'; readonly error: string }
  | {
      readonly kind: 'response';
      readonly status: number;
      /** Names lower-cased, in order. */
      readonly headers: readonly (readonly [string, string])[];
      /** The body as the client gave it (chunked framing removed), Latin-1. */
      readonly body: string;
      /** The body ended where its framing said (false: cut by the connection's close, or refused mid-body). */
      readonly complete: boolean;
      /** Whether the client would have kept the connection for another request. */
      readonly keepAlive: boolean;
    };

export interface ResponseReference {
  /** Node's client reading `bytes` (Latin-1) as the answer to `method`; the server closes after writing them. */
  read(bytes: string, method: 'GET' | 'HEAD'): Promise<NodeResponseVerdict>;
  close(): Promise<void>;
}

/** A raw TCP server that answers each request with the bytes registered for its path, then closes. */
export async function startResponseReference(): Promise<ResponseReference> {
  const answers = new Map<string, string>();
  let next = 0;
  const server: TcpServer = createTcpServer((socket) => {
    let head = '';
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.removeAllListeners('data');
      socket.resume();
      const path = head.slice(head.indexOf(' ') + 1, head.indexOf(' ', head.indexOf(' ') + 1));
      socket.end(answers.get(path) ?? '', 'latin1');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    read(bytes, method) {
      const path = `/${(next += 1)}`;
      answers.set(path, bytes);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      return new Promise<NodeResponseVerdict>((resolve) => {
        let settled = false;
        const settle = (verdict: NodeResponseVerdict): void => {
          if (settled) return;
          settled = true;
          answers.delete(path);
          agent.destroy();
          resolve(verdict);
        };
        let response: { complete: boolean } | undefined;
        const req = request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
          response = res;
          let body = '';
          res.setEncoding('latin1');
          res.on('data', (chunk: string) => (body += chunk));
          const done = (): void => {
            const headers: [string, string][] = [];
            for (let i = 0; i < res.rawHeaders.length; i += 2)
              headers.push([(res.rawHeaders[i] as string).toLowerCase(), res.rawHeaders[i + 1] as string]);
            settle({
              kind: 'response',
              status: res.statusCode ?? 0,
              headers,
              body,
              complete: res.complete,
              keepAlive: req.shouldKeepAlive,
            });
          };
          res.on('end', done);
          res.on('error', done);
          res.on('close', done);
        });
        req.on('error', (err: NodeJS.ErrnoException) => {
          // Bytes after a complete response fail the connection, not the response: its end still comes.
          if (!response?.complete) settle({ kind: 'refused', error: err.code ?? err.message });
        });
        req.end();
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
