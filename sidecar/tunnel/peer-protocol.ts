import { createHash, timingSafeEqual } from 'node:crypto';
import type { TunnelLimits } from '../../lib/tunnel/protocol.ts';

/**
 * How one frontend replica hands a stream to the replica that holds the environment's tunnel: an
 * h2c (cleartext HTTP/2) stream to the holder's peer port, carrying the stream's own headers (the
 * share's `:authority`, the `svc-tunnel-route` the first replica set, the identity headers it set
 * after the login) plus the environment and the replicas' shared credential below. The holder
 * removes both before forwarding into its tunnel.
 */
export const PEER_ENV_HEADER = 'svc-tunnel-env';
export const PEER_CREDENTIAL_HEADER = 'svc-peer-credential';

/**
 * Streams open at once on one peer session. It carries the streams of every environment the peer
 * holds; each tunnel's own cap still applies at the far end (503 "busy"), so this only bounds what
 * one replica can park on another.
 */
export function peerStreamCap(limits: TunnelLimits): number {
  return Math.max(1000, limits.maxStreamsPerTunnel * limits.maxTunnelsPerEnvironment);
}

/** Compares a presented credential with ours in constant time (digests first, so lengths leak nothing). */
export function credentialMatches(presented: string | string[] | undefined, credential: string): boolean {
  if (typeof presented !== 'string') return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(presented), digest(credential));
}
