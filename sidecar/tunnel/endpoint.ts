import type { IncomingMessage } from 'node:http';
import type { IncomingHttpHeaders as Http2Headers, ServerHttp2Stream } from 'node:http2';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { errorText } from '../../lib/errors.ts';
import { stripIdentityHeaders } from '../../lib/identity-headers.ts';
import type { Logger } from '../../lib/logger.ts';
import type { EnvironmentIdentity, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { forwardStream, rejectSocket } from '../../lib/tunnel/forward.ts';
import { refuseTcpStream } from '../../lib/tunnel/tcp-relay.ts';
import { ConnectionCounter } from './connection-counter.ts';
import { StreamBudget } from './stream-budget.ts';
import { watchTunnel } from '../../lib/tunnel/liveness.ts';
import { AGENT_VERSION_HEADER, type EnvironmentPresence } from '../../lib/tunnel/presence.ts';
import { socketLink, webSocketLink, type TunnelLink } from '../../lib/tunnel/link.ts';
import {
  ACCESS_PATH,
  CLOSE_REVOKED,
  CLOSE_TOO_MANY_TUNNELS,
  DIRECT_UPGRADE,
  ENVIRONMENT_TOKEN_HEADER,
  MAX_FRAME_MESSAGE_BYTES,
  TCP_PROTOCOL,
  TUNNEL_PATH,
  claimedEnvironment,
  shareTokenOf,
  type TunnelLimits,
} from '../../lib/tunnel/protocol.ts';
import type { HeldTunnel, TunnelLocator } from './locator.ts';
import { serveOnLink } from '../../lib/tunnel/server-session.ts';
import { tunnelClientSession, tunnelServer } from '../../lib/tunnel/http2.ts';

export interface TunnelEndpointOptions {
  readonly directory: ShareDirectory;
  readonly locator: TunnelLocator;
  readonly limits: TunnelLimits;
  readonly logger: Logger;
  /** Records which environments hold a tunnel here, for the installation's console. */
  readonly presence?: EnvironmentPresence;
}

/** How long an accepted tunnel may take to send its HTTP/2 SETTINGS. */
const SETTINGS_TIMEOUT_MS = 10_000;

/**
 * The frontend's end of the tunnels: accepts the upgrades agents send to `TUNNEL_PATH` (an agent
 * serving its shares) and `ACCESS_PATH` (an agent reaching a private share of its account), each
 * authenticated by the environment's token before the upgrade completes. Either transport
 * (lib/tunnel/link.ts) the limits allow: `Upgrade: svc-tunnel-h2` (direct) or a WebSocket. A direct
 * upgrade the limits do not allow is answered 400 by the WebSocket server, exactly as an
 * installation without the direct transport answers it, so the agent falls back to a WebSocket. Refusals
 * (no token, forged or revoked token, too many tunnels, too many streams) are logged with the peer
 * address and the claimed environment, never the token.
 */
export class TunnelEndpoint {
  private readonly options: TunnelEndpointOptions;
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_FRAME_MESSAGE_BYTES,
    perMessageDeflate: false,
  });
  private readonly accessLinks = new Map<string, Set<TunnelLink>>();
  private readonly tcpConnections: ConnectionCounter;
  private readonly budget: StreamBudget;
  private readonly unsubscribe: () => void;

  constructor(options: TunnelEndpointOptions) {
    this.options = options;
    this.tcpConnections = new ConnectionCounter(options.limits.maxTcpConnectionsPerShare);
    this.budget = new StreamBudget(options.limits);
    this.unsubscribe = options.directory.onRevoked((envZId) => this.revoke(envZId));
  }

  /** Takes an upgrade to the tunnel or access path (true), or leaves it to the caller (false). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const path = (req.url ?? '').split('?')[0];
    if (path !== TUNNEL_PATH && path !== ACCESS_PATH) return false;
    const { logger, directory } = this.options;
    const peer = req.socket.remoteAddress;
    const header = req.headers[ENVIRONMENT_TOKEN_HEADER];
    const token = typeof header === 'string' ? header : '';
    const claimed = claimedEnvironment(token);
    const refuse = (reason: string) => {
      logger.warn({ peer, claimed, path }, `tunnel refused: ${reason}`);
      rejectSocket(socket, 401, 'Unauthorized');
    };
    if (!claimed) {
      refuse('no environment token');
      return true;
    }
    directory.authenticate(token).then(
      (identity) => {
        if (!identity) return refuse('the environment token is not valid (forged, foreign or revoked)');
        const accept = (link: TunnelLink) =>
          path === TUNNEL_PATH
            ? this.acceptTunnel(link, identity, peer, req.headers[AGENT_VERSION_HEADER])
            : this.acceptAccess(link, identity, peer);
        const { transports } = this.options.limits;
        if (isDirectUpgrade(req) && transports.includes('direct')) return accept(acceptDirect(socket, head));
        if (!isDirectUpgrade(req) && !transports.includes('websocket')) {
          logger.warn({ peer, claimed, path }, 'tunnel refused: the WebSocket transport is turned off');
          return rejectSocket(socket, 400, 'Bad Request');
        }
        this.wss.handleUpgrade(req, socket, head, (ws) => accept(webSocketLink(ws)));
      },
      (err: unknown) => {
        logger.error({ err: errorText(err), claimed }, 'tunnel: cannot check the environment token');
        rejectSocket(socket, 503, 'Service Unavailable');
      },
    );
    return true;
  }

  /** The environments whose tunnels this endpoint's locator holds here. */
  connected(): string[] {
    return this.options.locator.connected();
  }

  close(): void {
    this.unsubscribe();
    for (const envZId of this.options.locator.connected()) {
      this.options.locator.closeEnvironment(envZId, 1001, 'frontend shutting down');
    }
    for (const links of this.accessLinks.values()) for (const link of links) link.terminate();
    this.accessLinks.clear();
    this.wss.close();
  }

  private acceptTunnel(
    link: TunnelLink,
    identity: EnvironmentIdentity,
    peer: string | undefined,
    version: string | string[] | undefined,
  ): void {
    const { limits, locator, logger, presence } = this.options;
    const { envZId, accountId } = identity;
    const capped = tunnelClientSession(link, limits);
    const { session } = capped;
    const tunnel: HeldTunnel = {
      id: randomUUID(),
      get openStreams() {
        return capped.openStreams;
      },
      open: (headers, endStream) => {
        try {
          return this.budget.open(accountId, capped, headers, endStream);
        } catch (err) {
          logger.warn({ envZId, err: errorText(err) }, 'tunnel: stream refused');
          throw err;
        }
      },
      close: (code, reason) => link.close(code, reason),
    };
    let attached = false;
    const settingsTimer = setTimeout(() => link.terminate(), SETTINGS_TIMEOUT_MS);
    session.once('remoteSettings', () => {
      clearTimeout(settingsTimer);
      if (!locator.attach(envZId, tunnel)) {
        logger.warn(
          { envZId, peer, max: limits.maxTunnelsPerEnvironment },
          'tunnel refused: the environment holds the maximum number of tunnels',
        );
        link.close(CLOSE_TOO_MANY_TUNNELS, 'too many tunnels for this environment');
        return;
      }
      attached = true;
      presence?.connected(envZId, version);
      logger.info({ envZId, peer, tunnel: tunnel.id, transport: link.transport }, 'tunnel: agent connected');
    });
    session.on('error', (err) => logger.warn({ envZId, err: errorText(err) }, 'tunnel: session error'));
    session.on('close', () => link.terminate());
    watchTunnel(link, session, limits, (silentMs) =>
      logger.warn({ envZId, peer, tunnel: tunnel.id, silentMs }, 'tunnel: agent silent; dropping the tunnel'),
    );
    link.onClose(() => {
      clearTimeout(settingsTimer);
      session.destroy();
      if (!attached) return;
      locator.detach(envZId, tunnel);
      presence?.disconnected(envZId);
      logger.info({ envZId, tunnel: tunnel.id }, 'tunnel: agent disconnected');
    });
  }

  private acceptAccess(link: TunnelLink, identity: EnvironmentIdentity, peer: string | undefined): void {
    const { limits, logger } = this.options;
    const links = this.accessLinks.get(identity.envZId) ?? new Set<TunnelLink>();
    if (links.size >= limits.maxTunnelsPerEnvironment) {
      logger.warn(
        { envZId: identity.envZId, peer },
        'access refused: the environment holds the maximum number of connections',
      );
      link.close(CLOSE_TOO_MANY_TUNNELS, 'too many access connections for this environment');
      return;
    }
    links.add(link);
    this.accessLinks.set(identity.envZId, links);
    const server = tunnelServer(limits);
    server.on('stream', (stream, headers) => this.accessStream(identity, stream, headers));
    server.on('sessionError', () => link.terminate());
    const session = serveOnLink(server, link);
    watchTunnel(link, session, limits, (silentMs) =>
      logger.warn({ envZId: identity.envZId, peer, silentMs }, 'access: agent silent; dropping the connection'),
    );
    logger.info({ envZId: identity.envZId, peer, transport: link.transport }, 'access: agent connected');
    link.onClose(() => {
      links.delete(link);
      if (links.size === 0) this.accessLinks.delete(identity.envZId);
      link.stream.destroy();
    });
  }

  /** A private access's stream: only to a private share of the same account, through its owner's tunnel. */
  private accessStream(identity: EnvironmentIdentity, stream: ServerHttp2Stream, headers: Http2Headers): void {
    const { directory, locator, limits, logger } = this.options;
    stream.on('error', () => undefined);
    const token = shareTokenOf(headers[':authority']);
    const share = token ? directory.lookup(token) : undefined;
    if (!share || share.shareMode !== 'private' || share.accountId !== identity.accountId) {
      logger.info({ envZId: identity.envZId, share: token }, 'access: no such private share for this account');
      stream.respond({ ':status': 404, 'content-type': 'text/plain; charset=utf-8' });
      stream.end(`404: there is no private share ${token ?? ''} of this account\n`);
      return;
    }
    const tcp = headers[':protocol'] === TCP_PROTOCOL;
    if (tcp !== (share.backendMode === 'tcp')) {
      const text = tcp
        ? `share ${share.token} is not a TCP share`
        : `share ${share.token} is a TCP share: reach it with a TCP access`;
      return refuseTcpStream(stream, 400, text);
    }
    const target = locator.find(share.envZId);
    if (!target) {
      stream.respond({ ':status': 503, 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' });
      stream.end(`503: share ${share.token} is offline: its agent is not connected\n`);
      return;
    }
    if (tcp && !this.tcpConnections.admit(share.token, stream)) {
      logger.warn(
        { envZId: identity.envZId, share: share.token, max: limits.maxTcpConnectionsPerShare },
        'access: TCP connection refused: the share holds the maximum number of connections',
      );
      return refuseTcpStream(stream, 503, `share ${share.token} has too many TCP connections open; try again later`);
    }
    stripIdentityHeaders(headers);
    forwardStream(stream, headers, target, { route: 'access', idleMs: limits.streamIdleMs });
  }

  private revoke(envZId: string): void {
    this.options.locator.closeEnvironment(envZId, CLOSE_REVOKED, 'environment credential revoked');
    for (const link of this.accessLinks.get(envZId) ?? []) link.close(CLOSE_REVOKED, 'environment credential revoked');
    this.accessLinks.delete(envZId);
    this.options.logger.info({ envZId }, 'tunnel: environment revoked; its tunnels are closed');
  }
}

/** Whether an upgrade asks for the direct transport (`Upgrade: svc-tunnel-h2`). */
function isDirectUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').trim().toLowerCase() === DIRECT_UPGRADE;
}

/**
 * Completes a direct upgrade: the 101 answer, then the connection itself carries HTTP/2. The
 * frontend's HTTP server hands a plain or TLS socket to its `upgrade` listeners; either is a `Socket`.
 */
function acceptDirect(socket: Duplex, head: Buffer): TunnelLink {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${DIRECT_UPGRADE}\r\n\r\n`);
  return socketLink(socket as Socket, head);
}
