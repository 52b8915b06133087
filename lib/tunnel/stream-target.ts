import type { OutgoingHttpHeaders } from 'node:http';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import { SvcError } from '../errors.ts';

/**
 * Something that opens HTTP/2 streams towards the agent that serves a share: a tunnel held by this
 * frontend, the access connection of an agent, or (with more than one frontend replica) the replica
 * that holds the tunnel.
 */
export interface StreamTarget {
  /** Opens one stream; throws `TunnelUnavailable` when the cap is reached or the connection is gone. */
  open(headers: OutgoingHttpHeaders): ClientHttp2Stream;
}

export type Unavailability = 'busy' | 'closed';

export class TunnelUnavailable extends SvcError {
  readonly reason: Unavailability;

  constructor(reason: Unavailability, message: string) {
    super(reason === 'busy' ? 'tunnel_busy' : 'tunnel_closed', message, { status: reason === 'busy' ? 503 : 502 });
    this.name = 'TunnelUnavailable';
    this.reason = reason;
  }
}

/**
 * An HTTP/2 client session as a StreamTarget with a cap on the streams open at once. The cap is the
 * smaller of ours and the one the peer advertised, so a peer cannot make us queue without bound.
 */
export class CappedSession implements StreamTarget {
  readonly session: ClientHttp2Session;
  private readonly cap: number;
  private active = 0;

  constructor(session: ClientHttp2Session, cap: number) {
    this.session = session;
    this.cap = cap;
  }

  get openStreams(): number {
    return this.active;
  }

  open(headers: OutgoingHttpHeaders): ClientHttp2Stream {
    if (this.session.closed || this.session.destroyed) {
      throw new TunnelUnavailable('closed', 'the tunnel is closed');
    }
    const cap = Math.min(this.cap, this.session.remoteSettings.maxConcurrentStreams ?? this.cap);
    if (this.active >= cap) {
      throw new TunnelUnavailable('busy', `the tunnel already carries ${this.active} streams (cap ${cap})`);
    }
    let stream: ClientHttp2Stream;
    try {
      stream = this.session.request(headers, { endStream: false });
    } catch (err) {
      throw new TunnelUnavailable('closed', `the tunnel cannot open a stream: ${(err as Error).message}`);
    }
    this.active++;
    stream.once('close', () => this.active--);
    return stream;
  }
}
