import http2, { type ClientHttp2Session } from 'node:http2';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { SESSION_WINDOW_BYTES, clientSettings, type TunnelLimits } from '../../lib/tunnel/protocol.ts';
import { CappedSession, type StreamTarget } from '../../lib/tunnel/stream-target.ts';
import { PEER_CREDENTIAL_HEADER, PEER_ENV_HEADER, peerStreamCap } from './peer-protocol.ts';

/** A peer that does not complete the HTTP/2 handshake in this time is given up (a dead pod's IP may not even refuse). */
const CONNECT_TIMEOUT_MS = 5_000;

interface Peer {
  readonly session: ClientHttp2Session;
  readonly capped: CappedSession;
}

/**
 * The HTTP/2 sessions from this replica to the others, one per peer address, opened on first use
 * and reopened after they close. A target for (peer, environment) adds the environment and the
 * shared credential to every stream it opens.
 */
export class PeerSessions {
  private readonly peers = new Map<string, Peer>();
  private readonly deps: { readonly limits: TunnelLimits; readonly credential: string; readonly logger: Logger };

  constructor(limits: TunnelLimits, credential: string, logger: Logger) {
    this.deps = { limits, credential, logger };
  }

  /** Streams to the replica at `address` for `envZId`'s tunnel there; that replica counts their requests. */
  target(address: string, envZId: string): StreamTarget {
    return {
      countedByHolder: true,
      open: (headers, endStream) =>
        this.peer(address).capped.open(
          { ...headers, [PEER_ENV_HEADER]: envZId, [PEER_CREDENTIAL_HEADER]: this.deps.credential },
          endStream,
        ),
    };
  }

  /** Closes the sessions to peers not in `live` (their Leases are gone); in-flight streams finish. */
  retain(live: ReadonlySet<string>): void {
    for (const [address, peer] of this.peers) {
      if (!live.has(address)) {
        this.peers.delete(address);
        peer.session.close();
      }
    }
  }

  close(): void {
    for (const peer of this.peers.values()) peer.session.destroy();
    this.peers.clear();
  }

  private peer(address: string): Peer {
    const known = this.peers.get(address);
    if (known && !known.session.closed && !known.session.destroyed) return known;
    const session = http2.connect(`http://${address}`, {
      settings: clientSettings(this.deps.limits),
      maxHeaderListPairs: 256,
    });
    const timer = setTimeout(() => session.destroy(), CONNECT_TIMEOUT_MS);
    session.once('connect', () => {
      clearTimeout(timer);
      session.setLocalWindowSize(SESSION_WINDOW_BYTES);
    });
    session.on('error', (err) =>
      this.deps.logger.warn({ peer: address, err: errorText(err) }, 'replica: peer session error'),
    );
    session.once('close', () => {
      clearTimeout(timer);
      if (this.peers.get(address)?.session === session) this.peers.delete(address);
    });
    const peer = { session, capped: new CappedSession(session, peerStreamCap(this.deps.limits)) };
    this.peers.set(address, peer);
    return peer;
  }
}
