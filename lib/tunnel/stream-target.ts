import type { OutgoingHttpHeaders } from 'node:http';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import { SvcError } from '../errors.ts';

/**
 * Something that opens HTTP/2 streams towards the agent that serves a share: a tunnel held by this
 * frontend, the access connection of an agent, or (with more than one frontend replica) the replica
 * that holds the tunnel.
 */
export interface StreamTarget {
  /**
   * Opens one stream; throws `TunnelUnavailable` when the cap is reached or the connection is gone.
   * `endStream`: the request has no body (its HEADERS frame ends the stream; no empty DATA frame).
   */
  open(headers: OutgoingHttpHeaders, endStream?: boolean): ClientHttp2Stream;
  /**
   * The streams go to the frontend replica that holds the tunnel, which counts their requests in the
   * share's traffic (sidecar/tunnel/peer-server.ts): the replica that forwards them does not, so each
   * request is counted once, by the replica whose report the controller accepts for the share.
   */
  readonly countedByHolder?: boolean;
}

/** Why a request could not be answered by the agent (lib/tunnel/forward.ts). */
export type ForwardFailure = 'busy' | 'unreachable' | 'timeout';

/**
 * A tunnelled share as the frontend's fast path reaches it (sidecar/fast-path/tunnel-exchange.ts):
 * the agent's streams, found again for every request, and what the share's slow path does besides
 * forwarding (its failure log, its traffic counters).
 */
export interface TunnelStreams {
  /** Where the share's agent is now; undefined while it holds no tunnel (the visitor gets "Share offline"). */
  find(): StreamTarget | undefined;
  /** A stream with no data either way for this long is cancelled. */
  readonly idleMs: number;
  /** A request the agent could not answer (logged as the slow path logs it). */
  failed(failure: ForwardFailure): void;
  /** Counts one request when its response is over (lib/share/traffic.ts), when the frontend counts traffic. */
  readonly record?: (failed: boolean, bytesIn: number, bytesOut: number) => void;
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

  open(headers: OutgoingHttpHeaders, endStream = false): ClientHttp2Stream {
    if (this.session.closed || this.session.destroyed) {
      throw new TunnelUnavailable('closed', 'the tunnel is closed');
    }
    const cap = Math.min(this.cap, this.session.remoteSettings.maxConcurrentStreams ?? this.cap);
    if (this.active >= cap) {
      throw new TunnelUnavailable('busy', `the tunnel already carries ${this.active} streams (cap ${cap})`);
    }
    let stream: ClientHttp2Stream;
    try {
      stream = this.session.request(headers, { endStream });
    } catch (err) {
      throw new TunnelUnavailable('closed', `the tunnel cannot open a stream: ${(err as Error).message}`);
    }
    this.active++;
    stream.once('close', () => this.active--);
    return stream;
  }
}
