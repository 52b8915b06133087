import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { SvcError } from '../../lib/errors.ts';
import { request as httpRequest } from '../../lib/node-http.ts';
import { socketLink, webSocketLink, type TunnelLink } from '../../lib/tunnel/link.ts';
import { AGENT_VERSION_HEADER } from '../../lib/tunnel/presence.ts';
import { SVC_VERSION } from '../../lib/version.ts';
import {
  DIRECT_UPGRADE,
  ENVIRONMENT_TOKEN_HEADER,
  MAX_FRAME_MESSAGE_BYTES,
  type TunnelTransport,
} from '../../lib/tunnel/protocol.ts';

/**
 * Which transport an agent dials (`SVC_TUNNEL_TRANSPORT`): `auto` tries the direct upgrade and falls
 * back to a WebSocket when the installation (or a proxy on the way) does not complete it; `direct`
 * and `websocket` use only that one.
 */
export type TransportChoice = 'auto' | TunnelTransport;
export const TRANSPORT_CHOICES: readonly TransportChoice[] = ['auto', 'direct', 'websocket'];

/** The transport choice named by `SVC_TUNNEL_TRANSPORT` (`auto` when unset); a clear error otherwise. */
export function transportFromEnv(value = process.env.SVC_TUNNEL_TRANSPORT): TransportChoice {
  if (value === undefined || value === '') return 'auto';
  const choice = TRANSPORT_CHOICES.find((c) => c === value.trim().toLowerCase());
  if (!choice) {
    throw new SvcError(
      'invalid_config',
      `SVC_TUNNEL_TRANSPORT must be one of ${TRANSPORT_CHOICES.join(', ')}, got ${JSON.stringify(value)}`,
    );
  }
  return choice;
}

/** The installation answered the upgrade with an HTTP status instead of completing it. */
export class UpgradeRefused extends Error {
  readonly status: number;

  constructor(status: number) {
    super(`the installation answered the upgrade with HTTP ${status}`);
    this.name = 'UpgradeRefused';
    this.status = status;
  }
}

/** The direct upgrade got no usable answer: 101 to another protocol, or none in time. */
export class UpgradeNotCompleted extends Error {
  constructor(why: string) {
    super(`the direct upgrade was not completed: ${why}`);
    this.name = 'UpgradeNotCompleted';
  }
}

/** What one dial attempt needs. */
export interface DialRequest {
  /** `ws(s)://<frontend>/api/v1/tunnel` or `…/tunnel/access`. */
  readonly url: string;
  readonly token: string;
  readonly handshakeTimeoutMs: number;
}

/**
 * Whether a failed direct upgrade means "not offered here" (fall back to a WebSocket) rather than a
 * refusal the WebSocket would get too: a wrong token (401) or an installation that cannot check it
 * (503) is not retried over the other transport. An older installation answers 400 (its WebSocket
 * server sees no `Upgrade: websocket`); a proxy that passes only WebSockets may answer anything else,
 * or 101 with the wrong protocol, or nothing (the handshake times out).
 */
export function fallsBack(err: unknown): boolean {
  if (err instanceof UpgradeRefused) return err.status !== 401 && err.status !== 503;
  return err instanceof UpgradeNotCompleted;
}

/**
 * One connection to the installation over the transport `choice` names: the one place an agent
 * decides how its tunnel travels. `auto` dials direct, then a WebSocket when `fallsBack` says so;
 * `onFallback` is told why.
 */
export async function dialLink(
  request: DialRequest,
  choice: TransportChoice,
  onFallback: (reason: string) => void,
): Promise<TunnelLink> {
  if (choice === 'websocket') return dialWebSocket(request);
  if (choice === 'direct') return dialDirect(request);
  try {
    return await dialDirect(request);
  } catch (err) {
    if (!fallsBack(err)) throw err;
    onFallback((err as Error).message);
    return dialWebSocket(request);
  }
}

/** The direct transport: `Upgrade: svc-tunnel-h2`, then HTTP/2 on the socket itself. */
export function dialDirect({ url, token, handshakeTimeoutMs }: DialRequest): Promise<TunnelLink> {
  const target = new URL(url);
  const secure = target.protocol === 'wss:' || target.protocol === 'https:';
  target.protocol = secure ? 'https:' : 'http:';
  return new Promise((resolve, reject) => {
    const req = (secure ? https.request : httpRequest)(target, {
      headers: {
        connection: 'Upgrade',
        upgrade: DIRECT_UPGRADE,
        [ENVIRONMENT_TOKEN_HEADER]: token,
        [AGENT_VERSION_HEADER]: SVC_VERSION,
      },
      agent: false,
      timeout: handshakeTimeoutMs,
    });
    const notCompleted = (why: string) => new UpgradeNotCompleted(why);
    req.on('upgrade', (res: IncomingMessage, socket: Socket, head: Buffer) => {
      if ((res.headers.upgrade ?? '').toLowerCase() !== DIRECT_UPGRADE) {
        socket.destroy();
        return reject(notCompleted(`101 to ${JSON.stringify(res.headers.upgrade ?? '')}`));
      }
      resolve(socketLink(socket, head));
    });
    req.on('response', (res: IncomingMessage) => {
      res.resume();
      reject(new UpgradeRefused(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(notCompleted(`no answer within ${handshakeTimeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** The WebSocket transport, resolved once the WebSocket is open. */
export function dialWebSocket({ url, token, handshakeTimeoutMs }: DialRequest): Promise<TunnelLink> {
  const ws = new WebSocket(url, {
    headers: { [ENVIRONMENT_TOKEN_HEADER]: token, [AGENT_VERSION_HEADER]: SVC_VERSION },
    maxPayload: MAX_FRAME_MESSAGE_BYTES,
    perMessageDeflate: false,
    handshakeTimeout: handshakeTimeoutMs,
    // Masking (RFC 6455 §10.3) protects intermediaries from scripts in browsers; this client is no
    // browser, and an all-zero mask lets both ends skip an XOR over every byte of the tunnel.
    generateMask: (mask: Buffer) => void mask.fill(0),
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(webSocketLink(ws)));
    ws.once('unexpected-response', (_req, res: IncomingMessage) => {
      res.resume();
      reject(new UpgradeRefused(res.statusCode ?? 0));
      ws.terminate();
    });
    ws.on('error', (err) => reject(err));
  });
}
