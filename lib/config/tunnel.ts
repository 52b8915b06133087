import type { ConfigReader } from '../config-reader.ts';
import {
  DEFAULT_TUNNEL_LIMITS,
  TUNNEL_TRANSPORTS,
  pingTimeoutFor,
  type TunnelLimits,
  type TunnelTransport,
} from '../tunnel/protocol.ts';

const KEYS = [
  'max_streams_per_tunnel',
  'max_streams_per_share',
  'max_streams_per_account',
  'max_tunnels_per_environment',
  'stream_idle_timeout',
  'ping_interval',
  'ping_timeout',
  'max_tcp_connections_per_share',
  'transports',
];

/**
 * The optional `tunnel` section of a public frontend for tunnels (`svc controller --config` with a
 * frontend, `svc public-frontend`): the limits of lib/tunnel/protocol.ts, each defaulting to `DEFAULT_TUNNEL_LIMITS`.
 */
export function readTunnelLimits(r: ConfigReader, value: unknown): TunnelLimits {
  const t = r.object(value, 'tunnel') ?? {};
  r.unknownKeys(t, 'tunnel', KEYS);
  const count = (key: string, max: number, fallback: number): number => {
    const v = t[key];
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) {
      r.problem(`tunnel.${key}`, `must be an integer between 1 and ${max}, got ${JSON.stringify(v)}`);
      return fallback;
    }
    return v;
  };
  const pingIntervalMs =
    r.duration(t, 'ping_interval', 'tunnel', { required: false }) ?? DEFAULT_TUNNEL_LIMITS.pingIntervalMs;
  const pingTimeoutMs = r.duration(t, 'ping_timeout', 'tunnel', { required: false }) ?? pingTimeoutFor(pingIntervalMs);
  if (pingTimeoutMs <= pingIntervalMs) {
    r.problem(
      'tunnel.ping_timeout',
      `must be longer than tunnel.ping_interval (${pingIntervalMs} ms), got ${pingTimeoutMs} ms`,
    );
  }
  const maxStreamsPerShare = count('max_streams_per_share', 10_000, DEFAULT_TUNNEL_LIMITS.maxStreamsPerShare);
  const maxStreamsPerAccount = count('max_streams_per_account', 100_000, DEFAULT_TUNNEL_LIMITS.maxStreamsPerAccount);
  if (maxStreamsPerShare > maxStreamsPerAccount) {
    r.problem(
      'tunnel.max_streams_per_share',
      `must not exceed tunnel.max_streams_per_account (${maxStreamsPerAccount}), got ${maxStreamsPerShare}`,
    );
  }
  return {
    ...DEFAULT_TUNNEL_LIMITS,
    transports: readTransports(r, t),
    maxStreamsPerTunnel: count('max_streams_per_tunnel', 10_000, DEFAULT_TUNNEL_LIMITS.maxStreamsPerTunnel),
    maxStreamsPerShare,
    maxStreamsPerAccount,
    maxTunnelsPerEnvironment: count('max_tunnels_per_environment', 100, DEFAULT_TUNNEL_LIMITS.maxTunnelsPerEnvironment),
    streamIdleMs:
      r.duration(t, 'stream_idle_timeout', 'tunnel', { required: false }) ?? DEFAULT_TUNNEL_LIMITS.streamIdleMs,
    pingIntervalMs,
    pingTimeoutMs,
    maxTcpConnectionsPerShare: count(
      'max_tcp_connections_per_share',
      10_000,
      DEFAULT_TUNNEL_LIMITS.maxTcpConnectionsPerShare,
    ),
  };
}

/** `tunnel.transports`: which of `direct` and `websocket` agents may use (both by default). */
function readTransports(r: ConfigReader, t: Record<string, unknown>): readonly TunnelTransport[] {
  const named = r.stringArray(t, 'transports', 'tunnel', { required: false, nonEmpty: true });
  if (!named) return DEFAULT_TUNNEL_LIMITS.transports;
  const unknown = named.filter((n) => !TUNNEL_TRANSPORTS.some((t) => t === n));
  if (unknown.length > 0) {
    r.problem(
      'tunnel.transports',
      `must list only ${TUNNEL_TRANSPORTS.join(' and ')}, got ${unknown.map((u) => JSON.stringify(u)).join(', ')}`,
    );
    return DEFAULT_TUNNEL_LIMITS.transports;
  }
  return TUNNEL_TRANSPORTS.filter((t) => named.includes(t));
}
