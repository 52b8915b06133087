import { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { MAX_FRAME_MESSAGE_BYTES } from './protocol.ts';

/** The part of ws's private state `_final` reads, as `createWebSocketStream` does. */
interface SocketOf {
  readonly _socket: (Duplex & { readonly _writableState: { readonly finished: boolean } }) | null;
}

/**
 * Splits queued chunks into messages of at most `maxBytes` each, in order. The tunnel carries a byte
 * stream (HTTP/2 does its own framing), so a chunk may be cut anywhere; a lone chunk that fits is sent
 * as is, without a copy.
 */
export function batches(chunks: readonly Buffer[], maxBytes: number): Buffer[] {
  const out: Buffer[] = [];
  let parts: Buffer[] = [];
  let size = 0;
  const flush = () => {
    if (parts.length === 0) return;
    const [first] = parts;
    out.push(parts.length === 1 && first ? first : Buffer.concat(parts, size));
    parts = [];
    size = 0;
  };
  for (const chunk of chunks) {
    let rest = chunk;
    while (rest.length > 0) {
      const take = Math.min(rest.length, maxBytes - size);
      parts.push(take === rest.length ? rest : rest.subarray(0, take));
      size += take;
      rest = rest.subarray(take);
      if (size === maxBytes) flush();
    }
  }
  flush();
  return out;
}

/**
 * A WebSocket as a byte-stream Duplex, for the tunnel's HTTP/2 session: ws's `createWebSocketStream`
 * with the same end, close, error and backpressure behaviour, plus `_writev`.
 *
 * Why: Node's HTTP/2 session writes one chunk per frame (through JSStreamSocket, corked per write
 * request), and `createWebSocketStream` implements only `_write`, so every frame became its own
 * WebSocket message and its own socket write — the tunnel's main transport cost in the profiles.
 * Here the chunks of a corked write, and those that queue while a send is in flight, leave as one
 * message. Message boundaries carry no meaning (the receiving end pushes each message's bytes), but a
 * message may not exceed the peer's `maxPayload`, so batches are capped at `maxMessageBytes`.
 */
export function webSocketDuplex(ws: WebSocket, maxMessageBytes = MAX_FRAME_MESSAGE_BYTES): Duplex {
  // After an error ws closes the connection itself, sending a close frame a terminate would cut.
  let terminateOnDestroy = true;
  const duplex: Duplex = new Duplex({
    autoDestroy: false,
    emitClose: false,
    objectMode: false,
    read() {
      if (ws.isPaused) ws.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      if (afterOpen(ws, () => duplex._write(chunk, _encoding, callback))) return;
      sendBatched(ws, [chunk], maxMessageBytes, callback);
    },
    writev(entries: { chunk: Buffer; encoding: BufferEncoding }[], callback) {
      if (afterOpen(ws, () => duplex._writev?.(entries, callback))) return;
      sendBatched(
        ws,
        entries.map((e) => e.chunk),
        maxMessageBytes,
        callback,
      );
    },
    final(callback) {
      if (afterOpen(ws, () => duplex._final(callback))) return;
      closeWhenFlushed(ws, duplex, callback);
    },
    destroy(err, callback) {
      destroyWebSocket(ws, duplex, err, callback, terminateOnDestroy);
    },
  });
  relayWebSocketEvents(ws, duplex, () => {
    terminateOnDestroy = false;
  });
  return duplex;
}

/** Runs `then` once `ws` opens; false (and nothing queued) when it is not still connecting. */
function afterOpen(ws: WebSocket, then: () => void): boolean {
  if (ws.readyState !== WebSocket.CONNECTING) return false;
  ws.once('open', then);
  return true;
}

/** Sends `chunks` as binary messages of at most `maxBytes`; `callback` once all are sent or one failed. */
function sendBatched(
  ws: WebSocket,
  chunks: readonly Buffer[],
  maxBytes: number,
  callback: (err?: Error | null) => void,
): void {
  const messages = batches(chunks, maxBytes);
  let pending = messages.length;
  let failed = false;
  if (pending === 0) return callback();
  for (const message of messages) {
    ws.send(message, { binary: true }, (err) => {
      if (failed) return;
      if (err) {
        failed = true;
        return callback(err);
      }
      if (--pending === 0) callback();
    });
  }
}

/** The writable side's end: the WebSocket closed once its socket has written everything. */
function closeWhenFlushed(ws: WebSocket, duplex: Duplex, callback: (err?: Error | null) => void): void {
  // A client whose handshake failed never got a socket: its `error` event settles the stream.
  const socket = (ws as unknown as SocketOf)._socket;
  if (socket === null) return;
  if (socket._writableState.finished) {
    callback();
    if (duplex.readableEnded) duplex.destroy();
  } else {
    // Not destroyed here: `end` follows, once the WebSocket's `close` pushes the EOF.
    socket.once('finish', () => callback());
    ws.close();
  }
}

/** The stream destroyed: `callback` and `close` once the WebSocket is closed (terminated unless ws closes it). */
function destroyWebSocket(
  ws: WebSocket,
  duplex: Duplex,
  err: Error | null,
  callback: (err: Error | null) => void,
  terminate: boolean,
): void {
  if (ws.readyState === WebSocket.CLOSED) {
    callback(err);
    process.nextTick(() => duplex.emit('close'));
    return;
  }
  let called = false;
  ws.once('error', (e) => {
    called = true;
    callback(e);
  });
  ws.once('close', () => {
    if (!called) callback(err);
    process.nextTick(() => duplex.emit('close'));
  });
  if (terminate) ws.terminate();
}

/**
 * The WebSocket's messages pushed as bytes (paused while the reader is full), its close as the
 * stream's end, its error as the stream's (`onWebSocketError` told first).
 */
function relayWebSocketEvents(ws: WebSocket, duplex: Duplex, onWebSocketError: () => void): void {
  // binaryType is left at its `nodebuffer` default, so every message arrives as one Buffer.
  ws.on('message', (data) => {
    if (!duplex.push(data)) ws.pause();
  });
  ws.once('error', (err) => {
    if (duplex.destroyed) return;
    onWebSocketError();
    duplex.destroy(err);
  });
  ws.once('close', () => {
    if (!duplex.destroyed) duplex.push(null);
  });
  duplex.on('end', () => {
    if (!duplex.destroyed && duplex.writableFinished) duplex.destroy();
  });
  const onError = (err: Error): void => {
    duplex.off('error', onError);
    duplex.destroy();
    // Like ws: an error nobody else listens for still throws.
    if (duplex.listenerCount('error') === 0) duplex.emit('error', err);
  };
  duplex.on('error', onError);
}
