import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A share backend that answers each request with bytes chosen by a plan, most of them wrong, every
 * byte of an answer marked with the request's tag (`<A7>`: visitor A's seventh request): whoever
 * receives a tag can tell whose answer it came from. The request's path is `/<tag>/<plan>`.
 */
export const PLANS = [
  'length',
  'chunked',
  'length shorter than the body',
  'a second response after the first',
  'extra bytes in a second write',
  'both Transfer-Encoding and Content-Length',
  'two different Content-Lengths',
  'chunk longer than its size',
  '103 Early Hints first',
  '101 nobody asked for',
  'a body on a 204',
  'a body on a 304',
  'a body whatever the method (HEAD)',
  'close mid-body',
  'close-delimited body',
  'HTTP/1.0 without keep-alive',
  'written in three pieces',
] as const;
export type Plan = (typeof PLANS)[number];

export interface TaggingBackend {
  readonly url: string;
  /** Connections accepted so far (fewer than requests: the frontend reused some). */
  readonly connections: () => number;
  readonly requests: () => number;
  close(): Promise<void>;
}

/** The answer's writes for `plan`, and whether the backend then closes. */
function answer(plan: Plan, tag: string): { writes: string[]; close: boolean } {
  const body = tag.repeat(3);
  const head = (status: string, fields: string[]): string =>
    `HTTP/1.1 ${status}\r\nX-Tag: ${tag}\r\n${fields.map((field) => `${field}\r\n`).join('')}\r\n`;
  const ok = head('200 OK', [`Content-Length: ${body.length}`]) + body;
  const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  switch (plan) {
    case 'length':
    case 'a body whatever the method (HEAD)':
      return { writes: [ok], close: false };
    case 'chunked':
      return { writes: [head('200 OK', ['Transfer-Encoding: chunked']) + chunked], close: false };
    case 'length shorter than the body':
      return { writes: [head('200 OK', [`Content-Length: ${body.length - 2}`]) + body], close: false };
    case 'a second response after the first':
      return { writes: [ok + ok], close: false };
    case 'extra bytes in a second write':
      return { writes: [ok, `${tag}${tag}`], close: false };
    case 'both Transfer-Encoding and Content-Length':
      return {
        writes: [head('200 OK', ['Transfer-Encoding: chunked', `Content-Length: ${chunked.length}`]) + chunked],
        close: false,
      };
    case 'two different Content-Lengths':
      return {
        writes: [head('200 OK', [`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`]) + body],
        close: false,
      };
    case 'chunk longer than its size':
      return {
        writes: [head('200 OK', ['Transfer-Encoding: chunked']) + `2\r\n${body}\r\n0\r\n\r\n`],
        close: false,
      };
    case '103 Early Hints first':
      return { writes: [head('103 Early Hints', [`Link: </${tag}>`]) + ok], close: false };
    case '101 nobody asked for':
      return { writes: [head('101 Switching Protocols', ['Upgrade: x', 'Connection: upgrade']) + body], close: false };
    case 'a body on a 204':
      return { writes: [head('204 No Content', [`Content-Length: ${body.length}`]) + body], close: false };
    case 'a body on a 304':
      return { writes: [head('304 Not Modified', [`Content-Length: ${body.length}`]) + body], close: false };
    case 'close mid-body':
      return { writes: [head('200 OK', [`Content-Length: ${body.length * 2}`]) + body], close: true };
    case 'close-delimited body':
      return { writes: [head('200 OK', []) + body], close: true };
    case 'HTTP/1.0 without keep-alive':
      return { writes: [ok.replace('HTTP/1.1', 'HTTP/1.0')], close: true };
    case 'written in three pieces':
      return { writes: [ok.slice(0, 10), ok.slice(10, ok.length - 3), ok.slice(ok.length - 3)], close: false };
  }
}

function serve(socket: Socket, counted: () => void): void {
  let buffered = '';
  let queue = Promise.resolve();
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('latin1');
    for (let end = buffered.indexOf('\r\n\r\n'); end >= 0; end = buffered.indexOf('\r\n\r\n')) {
      const head = buffered.slice(0, end);
      buffered = buffered.slice(end + 4);
      counted();
      const [, tag = '<?>', plan = 'length'] = /^\S+ \/([^/]+)\/(\S+) /.exec(head) ?? [];
      const { writes, close } = answer(decodeURIComponent(plan) as Plan, decodeURIComponent(tag));
      queue = queue.then(async () => {
        for (const [i, data] of writes.entries()) {
          if (i > 0) await new Promise((resolve) => setImmediate(resolve));
          if (!socket.destroyed) socket.write(data, 'latin1');
        }
        if (close) socket.destroy();
      });
    }
  });
}

export async function startTaggingBackend(): Promise<TaggingBackend> {
  let connections = 0;
  let requests = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serve(socket, () => (requests += 1));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connections: () => connections,
    requests: () => requests,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
