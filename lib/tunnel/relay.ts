import type { Http2Stream, OutgoingHttpHeaders, ServerHttp2Stream } from 'node:http2';

/**
 * nghttp2's error codes this module needs (RFC 9113 §7), written out: the frontend's fast path
 * imports this module, and `svc frontend` must not load node:http2 (and node:tls with it) for them.
 */
export const HTTP2_NO_ERROR = 0x0;
export const HTTP2_CANCEL = 0x8;
import type { Readable, Writable } from 'node:stream';

/**
 * Pipes a body from `from` into `into` and ends `into` only when the body really completed;
 * otherwise calls `abort` (which cuts the connection or resets the stream it writes to).
 *
 * Why not `pipe`: Node's HTTP/2 stream emits 'end' also when it was reset by the peer or its session
 * died (it pushes end-of-body after setting `rstCode`), so a plain pipe would end the receiver
 * cleanly with the body cut short. An HTTP/2 body completed when its 'end' comes with no error code
 * while its session is still up (a session destroyed here leaves code 0 on its streams); an HTTP/1.1
 * body (`IncomingMessage`) when it is `complete`. With `length` (a declared content-length), the
 * byte count must match too.
 */
export function relayBody(from: Readable, into: Writable, abort: () => void, length?: number): void {
  let bytes = 0;
  from.on('data', (chunk: Buffer) => (bytes += chunk.length));
  from.pipe(into, { end: false });
  onceSettled(from, (complete) => {
    if (complete && (length === undefined || bytes === length)) into.end();
    else abort();
  });
}

/** Calls `settled` once: `true` when the body ended whole, `false` when it closed or ended cut short. */
export function onceSettled(from: Readable, settled: (complete: boolean) => void): void {
  // A destroyed stream no longer names its session: take it now.
  const session = isHttp2Stream(from) ? from.session : undefined;
  const completed = (): boolean => {
    if (!isHttp2Stream(from)) return (from as Readable & { complete?: boolean }).complete !== false;
    return from.rstCode === HTTP2_NO_ERROR && session !== undefined && !session.destroyed;
  };
  let done = false;
  const settle = (complete: boolean): void => {
    if (done) return;
    done = true;
    settled(complete);
  };
  from.once('end', () => settle(completed()));
  from.once('close', () => settle(false));
}

function isHttp2Stream(stream: Readable): stream is Readable & Http2Stream {
  return 'rstCode' in stream;
}

/**
 * Resets a stream (RST_STREAM), so the peer sees the body failed. `close(code)` on a stream whose
 * writable side is still open sends END_STREAM before the reset, which the peer reads as a complete
 * body; destroying it with an error sends only the reset.
 */
export function resetStream(stream: Http2Stream): void {
  if (stream.destroyed) return;
  if (stream.writableEnded) stream.close(HTTP2_CANCEL);
  else stream.destroy(new Error('the other side of the relay failed'));
}

/** The content-length a response or request declared, when it is a plain number of bytes. */
export function declaredLength(value: string | string[] | number | undefined): number | undefined {
  if (value === undefined || Array.isArray(value)) return undefined;
  const text = String(value);
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

/**
 * Answers `stream` with a response head that came from across the tunnel (an agent, a peer replica,
 * a share backend): any of them may be hostile or broken. Node's `respond` throws on a status
 * outside 200–599 and on header values it refuses, and a throw inside an event handler ends the
 * process, with every other account's tunnels in it; such a head is not relayed. False when it was
 * not: the caller answers its own failure. `endStream`: the response has no body.
 */
export function relayHead(stream: ServerHttp2Stream, headers: OutgoingHttpHeaders, endStream = false): boolean {
  const status = Number(headers[':status']);
  if (!Number.isInteger(status) || status < 200 || status > 599) return false;
  try {
    stream.respond({ ...headers, ':status': status }, { endStream });
    return true;
  } catch {
    return false;
  }
}
