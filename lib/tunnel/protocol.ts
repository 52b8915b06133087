import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { IncomingHttpHeaders as Http2Headers, Settings } from 'node:http2';
import { connectionListed } from '../hop-by-hop.ts';

/**
 * The tunnel wire protocol, shared by the agent (agent/tunnel) and the installation's public
 * frontend (sidecar/tunnel); docs/design.md, "The tunnel".
 *
 * The agent dials out: an HTTP/1.1 upgrade to `TUNNEL_PATH` on the frontend's endpoint host,
 * authenticated by the environment's token in `ENVIRONMENT_TOKEN_HEADER` — `Upgrade:
 * svc-tunnel-h2` (`DIRECT_UPGRADE`: HTTP/2 runs on the upgraded connection itself) or a WebSocket
 * (HTTP/2 runs in its messages; for proxies that pass only WebSockets). Over the upgraded
 * connection runs HTTP/2 with reversed roles: the frontend is the HTTP/2 client and opens one stream
 * per visitor request; the agent is the HTTP/2 server and answers it from the share named by the
 * first label of `:authority`. WebSockets travel as RFC 8441 extended CONNECT streams
 * (`:protocol: websocket`). A second connection to `ACCESS_PATH` turns the roles around again for
 * private accesses: there the agent is the HTTP/2 client and the frontend forwards its streams into
 * the tunnel of the environment that owns the share.
 */
export const TUNNEL_PATH = '/api/v1/tunnel';
export const ACCESS_PATH = '/api/v1/tunnel/access';
export const ENVIRONMENT_TOKEN_HEADER = 'x-environment-token';
/** The `Upgrade` token of the direct transport (lib/tunnel/link.ts). */
export const DIRECT_UPGRADE = 'svc-tunnel-h2';

/**
 * How a tunnel's HTTP/2 session travels: `direct` on the upgraded connection itself (the socket is
 * handed to Node's HTTP/2, which reads and writes it natively), `websocket` as the payload of a
 * WebSocket (for proxies that pass nothing else; every byte crosses JavaScript twice).
 */
export type TunnelTransport = 'direct' | 'websocket';
export const TUNNEL_TRANSPORTS: readonly TunnelTransport[] = ['direct', 'websocket'];

/**
 * Set by the frontend on every tunnelled stream (whatever a client sent is replaced): `public` for
 * a visitor of a public share, `access` for a private access of the owning account. The agent serves
 * a private share only on `access` streams and removes the header before the backend sees it.
 */
export const ROUTE_HEADER = 'svc-tunnel-route';
export type TunnelRoute = 'public' | 'access';

/**
 * The `:protocol` of an extended CONNECT stream that carries one TCP connection of a private TCP
 * share: the access's agent opens it, the frontend relays it into the owner's tunnel, and the owner's
 * agent dials the share's target (the one given at share time, never one the stream names).
 */
export const TCP_PROTOCOL = 'svc-tcp';

/** WebSocket close codes of the tunnel (4000-4999 are free for applications). */
export const CLOSE_REVOKED = 4001;
export const CLOSE_TOO_MANY_TUNNELS = 4008;

/** The frontend's limits; each can be set in the installation config (docs/design.md). */
export interface TunnelLimits {
  /** Streams (requests, websockets) open at once through one tunnel; more are answered 503. */
  readonly maxStreamsPerTunnel: number;
  /**
   * HTTP streams (requests, websockets) open at once to one share, over all its environment's tunnels
   * here; more are answered 503 "Share busy", so one share's visitors leave the others room.
   */
  readonly maxStreamsPerShare: number;
  /**
   * Streams open at once into the tunnels of one account, over all its environments, in one frontend
   * process. Each may park up to `STREAM_WINDOW_BYTES` here (a visitor that does not read), so this
   * bounds what one account can make the frontend hold: this many windows.
   */
  readonly maxStreamsPerAccount: number;
  /** Tunnels one environment may hold open at once; more are refused at the upgrade. */
  readonly maxTunnelsPerEnvironment: number;
  /**
   * A stream with no data either way for this long is reset (the visitor gets 504); a TCP stream only
   * while bytes wait in it (lib/tunnel/tcp-relay.ts), so a quiet connection with nothing waiting stays.
   */
  readonly streamIdleMs: number;
  /** Each end sends an HTTP/2 PING on its tunnels this often (lib/tunnel/liveness.ts). */
  readonly pingIntervalMs: number;
  /** A tunnel from which nothing at all arrived for this long is dropped as dead. */
  readonly pingTimeoutMs: number;
  /** TCP connections open at once to one TCP share through the frontend; more are refused (503). */
  readonly maxTcpConnectionsPerShare: number;
  /** Largest header block of one request or response (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE). */
  readonly maxHeaderListBytes: number;
  /** The transports the endpoint accepts (lib/tunnel/link.ts); an agent asking for another falls back. */
  readonly transports: readonly TunnelTransport[];
}

/** The ping timeout when only the interval is set: two missed pings plus 2 s for the round trip. */
export function pingTimeoutFor(pingIntervalMs: number): number {
  return 2 * pingIntervalMs + 2_000;
}

export const DEFAULT_TUNNEL_LIMITS: TunnelLimits = {
  maxStreamsPerTunnel: 100,
  // Below the tunnel's cap, so the visitors of one share cannot take the tunnel from its neighbours.
  maxStreamsPerShare: 64,
  // 200 parked windows of 1 MiB: the most one account can make a frontend process hold.
  maxStreamsPerAccount: 200,
  maxTunnelsPerEnvironment: 4,
  streamIdleMs: 120_000,
  // A silent cut is noticed within 8 s: two missed pings plus 2 s for a slow round trip.
  pingIntervalMs: 3_000,
  pingTimeoutMs: pingTimeoutFor(3_000),
  // A TCP share serves a handful of clients (a database pool, SSH sessions); 64 leaves room for a
  // pool while one share cannot take the whole tunnel (100 streams) from its environment's others.
  maxTcpConnectionsPerShare: 64,
  // Node's HTTP/1 parser accepts 16 KiB of headers; the frontend adds the identity and forwarding ones.
  maxHeaderListBytes: 32 * 1024,
  transports: TUNNEL_TRANSPORTS,
};

/**
 * Largest WebSocket message of a tunnel: both ends' `maxPayload`, and the cap on a batch of HTTP/2
 * frames sent as one message (lib/tunnel/ws-duplex.ts); one frame is at most 16 KiB plus 9 bytes.
 */
export const MAX_FRAME_MESSAGE_BYTES = 1024 * 1024;

/**
 * HTTP/2 flow-control windows. The default 64 KiB per stream needs a WINDOW_UPDATE round trip per
 * 64 KiB, which caps a download far below the link; a larger window lets a stream keep the pipe
 * full, and bounds what one unread stream can park in the receiver's memory.
 */
export const STREAM_WINDOW_BYTES = 1024 * 1024;
export const SESSION_WINDOW_BYTES = 16 * 1024 * 1024;

/** SETTINGS the agent's HTTP/2 server sends: extended CONNECT on, the stream cap advertised. */
export function serverSettings(limits: TunnelLimits): Settings {
  return {
    enableConnectProtocol: true,
    initialWindowSize: STREAM_WINDOW_BYTES,
    maxConcurrentStreams: limits.maxStreamsPerTunnel,
    maxHeaderListSize: limits.maxHeaderListBytes,
  };
}

/** SETTINGS of the HTTP/2 client end: no server push, so the server can never open a stream. */
export function clientSettings(limits: TunnelLimits): Settings {
  return { enablePush: false, initialWindowSize: STREAM_WINDOW_BYTES, maxHeaderListSize: limits.maxHeaderListBytes };
}

/**
 * Headers that belong to one HTTP/1.1 connection and are forbidden in HTTP/2 (RFC 9113 §8.2.2),
 * plus `host` (carried as `:authority`) and the route marker only the frontend sets.
 */
const CONNECTION_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'host',
  ROUTE_HEADER,
]);

/**
 * An HTTP/1.1 (or HTTP/2) header set as it may travel on a tunnel stream: pseudo-headers,
 * connection-specific headers and any header the `Connection` header names (lib/hop-by-hop.ts) are
 * dropped; `te` is kept only as `trailers`.
 */
export function tunnelHeaders(headers: IncomingHttpHeaders | Http2Headers): OutgoingHttpHeaders {
  const named = connectionListed(headers.connection);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || CONNECTION_HEADERS.has(name) || named.includes(name)) continue;
    if (name === 'te') {
      if (String(value).toLowerCase() === 'trailers') out.te = 'trailers';
      continue;
    }
    out[name] = value;
  }
  return out;
}

/** The share token a tunnel stream is for: the first label of `:authority` (`<token>.<domain>`). */
export function shareTokenOf(authority: string | undefined): string | undefined {
  if (!authority) return undefined;
  const label = authority.split('.')[0]?.toLowerCase();
  return label && /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label) ? label : undefined;
}

/** The WebSocket URL of a frontend's tunnel or access endpoint, from its public base URL. */
export function tunnelUrl(endpointUrl: URL | string, path: typeof TUNNEL_PATH | typeof ACCESS_PATH): string {
  const url = new URL(path, endpointUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.href;
}

/** The public URL of a share: `<scheme>://<token>.<domain>[:<port>]`. */
export function shareUrl(token: string, domain: string, base: { protocol: string; port: number | string }): string {
  const url = new URL(`${base.protocol}//${token}.${domain}`);
  url.port = String(base.port);
  return url.origin;
}

/**
 * The non-secret part of an environment token (`svcv_<envZId>_<secret>`), safe to log: the
 * environment the presenter claims to be. Undefined when the text does not have that shape.
 */
export function claimedEnvironment(token: string): string | undefined {
  const id = /^svcv_([a-z2-7]{12})_/.exec(token)?.[1];
  return id;
}
