import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** One request as a scripted backend read it. */
export interface ScriptedRequest {
  readonly method: string;
  readonly path: string;
  readonly head: string;
  readonly body: string;
}

/** What the backend writes for a request: raw bytes, after `delayMs`; no bytes: it never answers. */
export interface ScriptedAnswer {
  readonly bytes?: string;
  readonly delayMs?: number;
  /** Close the connection after writing. */
  readonly close?: boolean;
  /** After the bytes, echo whatever else arrives (a switched protocol). */
  readonly echo?: boolean;
}

export interface ScriptedBackend {
  readonly url: URL;
  readonly seen: ScriptedRequest[];
  /**
   * `seen <method> <path>`, `answered <path>`, and `dropped <path>` when the frontend closed the
   * connection of a request not answered yet, in the order they happened.
   */
  readonly events: string[];
  /** Backend connections open now. */
  open(): number;
  close(): Promise<void>;
}

/**
 * A share backend on raw sockets that answers what `script` says, including what no HTTP library
 * would send (a 101 nobody asked for, a 20 KB head, no answer at all). It reads heads and
 * Content-Length bodies in order, one request at a time per connection.
 */
export async function startScriptedBackend(
  script: (request: ScriptedRequest) => ScriptedAnswer,
): Promise<ScriptedBackend> {
  const seen: ScriptedRequest[] = [];
  const events: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    let pending: string | undefined;
    socket.on('close', () => {
      sockets.delete(socket);
      if (pending !== undefined) events.push(`dropped ${pending}`);
    });
    socket.on('error', () => socket.destroy());
    let buffered = '';
    let busy = false;
    let echoing = false;
    const next = (): void => {
      if (busy || echoing) return;
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffered.slice(0, end);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const body = buffered.slice(end + 4, end + 4 + length);
      buffered = buffered.slice(end + 4 + length);
      const [method = '', path = ''] = head.split(' ');
      const request = { method, path, head, body };
      seen.push(request);
      events.push(`seen ${method} ${path}`);
      const reply = script(request);
      busy = true;
      pending = path;
      if (reply.bytes === undefined) return;
      const send = (): void => {
        if (socket.destroyed) return;
        busy = false;
        pending = undefined;
        events.push(`answered ${path}`);
        socket.write(reply.bytes as string, 'latin1');
        if (reply.echo) {
          echoing = true;
          if (buffered) socket.write(buffered, 'latin1');
          buffered = '';
        }
        if (reply.close) socket.end();
        else next();
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    };
    socket.on('data', (chunk: Buffer) => {
      if (echoing) return void socket.write(chunk);
      buffered += chunk.toString('latin1');
      next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}`),
    seen,
    events,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A 200 with `body`, framed by Content-Length, `extraHead` (whole lines) among its headers. */
export function ok(body: string, extraHead = ''): string {
  return `HTTP/1.1 200 OK\r\ncontent-length: ${Buffer.byteLength(body, 'latin1')}\r\n${extraHead}\r\n${body}`;
}
