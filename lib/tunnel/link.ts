import type { Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import type { TunnelTransport } from './protocol.ts';
import { webSocketDuplex } from './ws-duplex.ts';

/** The close code a link reports when it ended without one (the WebSocket "abnormal closure"). */
export const CLOSE_ABNORMAL = 1006;

/**
 * One upgraded connection that carries a tunnel's HTTP/2 session, whatever its transport: what the
 * session runs on, how the link is closed with an application code the other end sees (a WebSocket
 * close frame, or a GOAWAY carrying the code), and a count of bytes received for dead-peer detection.
 */
export interface TunnelLink {
  readonly transport: TunnelTransport;
  /** The byte stream to hand to `http2.connect` / `Http2Server`'s `connection`. */
  readonly stream: Duplex;
  readonly open: boolean;
  /** Bytes (and WebSocket control frames) received so far: anything that proves the peer alive. */
  received(): number;
  /** Tells a direct link which session runs on it: `close` then sends its code in a GOAWAY. */
  bind(session: Http2Session): void;
  /** Ends the link gracefully with an application close code (4000-4999) and reason. */
  close(code: number, reason: string): void;
  /** Drops the link at once. */
  terminate(): void;
  /** Called once when the link is closed, with the peer's close code (`CLOSE_ABNORMAL` without one). */
  onClose(listener: (code: number) => void): void;
}

/** A WebSocket as a tunnel link: the session runs over `webSocketDuplex`. */
export function webSocketLink(ws: WebSocket): TunnelLink {
  const stream = webSocketDuplex(ws);
  stream.on('error', () => undefined);
  let count = 0;
  const heard = (data?: Buffer): void => {
    count += Math.max(1, data?.length ?? 0);
  };
  ws.on('message', heard);
  ws.on('ping', heard);
  ws.on('pong', heard);
  return {
    transport: 'websocket',
    stream,
    get open() {
      return ws.readyState === WebSocket.OPEN;
    },
    received: () => count,
    bind: () => undefined,
    close: (code, reason) => ws.close(code, reason),
    terminate: () => ws.terminate(),
    onClose: (listener) => {
      if (ws.readyState === WebSocket.CLOSED) process.nextTick(() => listener(CLOSE_ABNORMAL));
      else ws.once('close', (code: number) => listener(code));
    },
  };
}

/** Prefix of a GOAWAY's opaque data that carries a link close code: `svc-close <code> <reason>`. */
const CLOSE_DATA_PREFIX = 'svc-close ';

/** The close code a GOAWAY's opaque data carries, if it is one of ours. */
export function closeCodeOf(opaqueData: Buffer | undefined): number | undefined {
  const text = opaqueData?.toString('utf8') ?? '';
  if (!text.startsWith(CLOSE_DATA_PREFIX)) return undefined;
  const code = Number.parseInt(text.slice(CLOSE_DATA_PREFIX.length), 10);
  return code >= 1000 && code <= 4999 ? code : undefined;
}

/** How long a closing direct link waits for its GOAWAY to be written before it cuts the connection. */
const GOAWAY_GRACE_MS = 50;

/**
 * An upgraded TCP (or TLS) socket as a tunnel link: HTTP/2 runs on the socket itself. `head` is what
 * arrived after the upgrade's headers (the start of the HTTP/2 preface, possibly). Keep-alive probes
 * and Nagle are off: dead-peer detection is the HTTP/2 PING's, and HTTP/2 does its own batching.
 */
export function socketLink(socket: Socket, head: Buffer): TunnelLink {
  if (head.length > 0) socket.unshift(head);
  socket.setTimeout(0);
  socket.setNoDelay(true);
  let session: Http2Session | undefined;
  let code: number | undefined;
  const link: TunnelLink = {
    transport: 'direct',
    stream: socket,
    get open() {
      return !socket.destroyed;
    },
    // Node counts bytes read on the socket's handle even while HTTP/2 consumes it natively.
    received: () => socket.bytesRead,
    bind: (s) => {
      session = s;
      s.on('goaway', (_errorCode: number, _lastStreamId: number, data?: Buffer) => {
        code ??= closeCodeOf(data);
      });
    },
    // The GOAWAY carries the code; the connection is then cut, not ended gracefully, so the streams
    // in flight fail at both ends (a graceful close would let the peer read them as ended whole).
    close: (closeCode, reason) => {
      code ??= closeCode;
      try {
        session?.goaway(0, 0, Buffer.from(`${CLOSE_DATA_PREFIX}${closeCode} ${reason}`));
      } catch {
        // The session closed meanwhile; the socket is cut all the same.
      }
      setTimeout(() => link.terminate(), GOAWAY_GRACE_MS).unref();
    },
    // The socket first: a session destroyed on a live socket would still write its streams' closing
    // frames, which the peer could read as bodies that ended whole.
    terminate: () => {
      socket.destroy();
      session?.destroy();
    },
    onClose: (listener) => {
      if (socket.destroyed && socket.closed) process.nextTick(() => listener(code ?? CLOSE_ABNORMAL));
      else socket.once('close', () => listener(code ?? CLOSE_ABNORMAL));
    },
  };
  socket.on('error', () => undefined);
  // HTTP/2 has no half-closed connection: the peer's FIN means it is gone. A server's upgraded
  // socket allows half-open connections, and the session does not close on it, so without this a
  // killed agent would count as online until the PING deadline.
  socket.once('end', () => link.terminate());
  return link;
}
