import type { IncomingHttpHeaders } from 'node:http2';
import type { TrafficCounter } from '../../lib/share/traffic.ts';
import type { ShareDirectory } from '../../lib/tunnel/directory.ts';
import { ROUTE_HEADER, shareTokenOf } from '../../lib/tunnel/protocol.ts';
import type { RecordRequest } from '../../lib/tunnel/stream-meter.ts';

/**
 * Which share a stream from another replica counts for, given the environment whose tunnel here it
 * goes into: a function that counts its request, or undefined when it is not counted.
 */
export type PeerStreamCounter = (envZId: string, headers: IncomingHttpHeaders) => RecordRequest | undefined;

/**
 * The holder's side of counting traffic across replicas: a request a replica forwards to the one
 * holding the tunnel (peer-client.ts) is counted here, in this replica's `traffic`, which it
 * reports for environments it holds, so the controller's rule (traffic only for environments the
 * reporting replica holds) keeps taking it. Counted as the forwarding replica would count it on
 * its own tunnel: an HTTP request (not a WebSocket's CONNECT) on the `public` route, for the public
 * HTTP share its `:authority` names (the share the agent serves it as), and only when the registry
 * says that share belongs to the environment the stream goes into. A stream naming another
 * environment's share is forwarded as before but counted nowhere: a replica credential cannot
 * write traffic into a share this replica does not serve.
 */
export function peerStreamCounter(directory: ShareDirectory, traffic: TrafficCounter): PeerStreamCounter {
  return (envZId, headers) => {
    if (headers[ROUTE_HEADER] !== 'public' || headers[':method'] === 'CONNECT') return undefined;
    const token = shareTokenOf(headers[':authority']);
    const share = token ? directory.lookup(token) : undefined;
    if (!share || share.envZId !== envZId || share.shareMode !== 'public' || share.backendMode === 'tcp')
      return undefined;
    return (failed, bytesIn, bytesOut) => traffic.record(share.token, failed, bytesIn, bytesOut);
  };
}
