import type { OutgoingHttpHeaders } from 'node:http';
import type { ClientHttp2Stream, ServerHttp2Stream } from 'node:http2';
import { STATUS_CODES } from '../node-http.ts';
import { HTTP2_NO_ERROR } from './relay.ts';

/** Counts one request whose response is over (lib/share/traffic.ts `TrafficCounter.record`). */
export type RecordRequest = (failed: boolean, bytesIn: number, bytesOut: number) => void;

/**
 * Measures one request served on an HTTP/2 stream that is forwarded into a tunnel (another
 * replica's, peer-server.ts), as the frontend measures a visitor's request: bytes in are the
 * request body received, bytes out the response head (counted as its HTTP/1.1 status line and
 * header lines) and the body relayed from the tunnel; the request failed when the response is a
 * 5xx, or none was sent, or it did not end whole. `record` is called once, when the stream closes.
 */
export class StreamMeter {
  private bytesIn = 0;
  private bodyOut = 0;

  constructor(incoming: ServerHttp2Stream, record: RecordRequest) {
    incoming.on('data', (chunk: Buffer) => (this.bytesIn += chunk.length));
    incoming.once('close', () => {
      const sent = incoming.headersSent ? incoming.sentHeaders : undefined;
      const status = Number(sent?.[':status'] ?? 0);
      const whole = incoming.writableFinished && incoming.rstCode === HTTP2_NO_ERROR;
      const failed = !sent || status >= 500 || !whole;
      record(failed, this.bytesIn, (sent ? headBytes(status, sent) : 0) + this.bodyOut);
    });
  }

  /** The tunnel's response is being relayed from `outgoing`: its body bytes count out. */
  relaying(outgoing: ClientHttp2Stream): void {
    outgoing.on('data', (chunk: Buffer) => (this.bodyOut += chunk.length));
  }
}

/** The length of the response head as an HTTP/1.1 server writes it: status line, header lines, blank line. */
function headBytes(status: number, headers: OutgoingHttpHeaders): number {
  let bytes = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n\r\n`.length;
  for (const [name, value] of Object.entries(headers)) {
    if (name.startsWith(':') || value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) bytes += Buffer.byteLength(`${name}: ${each}\r\n`);
  }
  return bytes;
}
