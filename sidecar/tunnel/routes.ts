import type { ServerResponse } from 'node:http';
import type { ShareCookies } from '../../lib/backend-cookies.ts';
import { parseDuration } from '../../lib/duration.ts';
import { compileGlob } from '../../lib/glob.ts';
import type { Logger } from '../../lib/logger.ts';
import type { ShareSource } from '../../lib/share/source.ts';
import { DEFAULT_CHECK_INTERVAL, type ShareRoute } from '../../lib/share/spec.ts';
import type { PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { forwardRequest, forwardUpgrade, rejectSocket, type ForwardFailure } from '../../lib/tunnel/forward.ts';
import type { TunnelLimits } from '../../lib/tunnel/protocol.ts';
import type { TrafficCounter } from '../../lib/share/traffic.ts';
import { sendPage, TUNNEL_PAGES, tunnelPageHeaders } from '../pages.ts';
import type { TunnelLocator } from './locator.ts';

export interface TunnelledSharesOptions {
  readonly directory: ShareDirectory;
  readonly locator: TunnelLocator;
  readonly limits: TunnelLimits;
  readonly logger: Logger;
  /**
   * Per-share request counters for the installation's console; nothing is counted without it. A
   * request forwarded to the replica holding the tunnel is left to that replica to count.
   */
  readonly traffic?: TrafficCounter;
}

const DEFAULT_CHECK_INTERVAL_MS = parseDuration(DEFAULT_CHECK_INTERVAL) ?? 3 * 3_600_000;

function page(res: ServerResponse, kind: ForwardFailure | 'offline'): void {
  const { status, title, message } = TUNNEL_PAGES[kind];
  sendPage(res, status, title, message, tunnelPageHeaders(TUNNEL_PAGES[kind]));
}

/**
 * The public shares of the share registry as the frontend's ShareSource: a share's route carries its
 * OAuth options from the registry (so the login happens here, before anything reaches the agent) and
 * an upstream that sends the request through the tunnel of the environment that owns the share.
 * Private shares are never routed here; they are reached only through an access (endpoint.ts).
 */
export function tunnelledShares(options: TunnelledSharesOptions): ShareSource {
  const { directory, locator, limits, logger, traffic } = options;
  const routes = new WeakMap<PublishedShare, ShareRoute>();

  const routeOf = (entry: PublishedShare): ShareRoute => {
    const known = routes.get(entry);
    if (known) return known;
    const upstream = {
      web: (
        req: Parameters<typeof forwardRequest>[0],
        res: ServerResponse,
        setCookie: string | undefined,
        cookies?: ShareCookies,
      ) => {
        const target = locator.find(entry.envZId);
        if (!target?.countedByHolder) traffic?.track(entry.token, req, res);
        if (!target) return page(res, 'offline');
        forwardRequest(req, res, target, {
          route: 'public',
          idleMs: limits.streamIdleMs,
          ...(setCookie ? { setCookie } : {}),
          ...(cookies ? { cookies } : {}),
          fail: (r, failure) => {
            logger.warn({ share: entry.token, envZId: entry.envZId, failure }, 'tunnel: request failed');
            page(r, failure);
          },
        });
      },
      ws: (
        req: Parameters<typeof forwardUpgrade>[0],
        socket: Parameters<typeof forwardUpgrade>[1],
        head: Buffer,
        cookies?: ShareCookies,
      ) => {
        const target = locator.find(entry.envZId);
        if (!target) return rejectSocket(socket, 503, 'Service Unavailable');
        forwardUpgrade(req, socket, head, target, 'public', cookies);
      },
      streams: {
        find: () => locator.find(entry.envZId),
        idleMs: limits.streamIdleMs,
        failed: (failure: ForwardFailure) =>
          logger.warn({ share: entry.token, envZId: entry.envZId, failure }, 'tunnel: request failed'),
        ...(traffic
          ? {
              record: (failed: boolean, bytesIn: number, bytesOut: number) =>
                traffic.record(entry.token, failed, bytesIn, bytesOut),
            }
          : {}),
      },
    };
    const oauth = entry.oauth
      ? {
          provider: entry.oauth.provider,
          emailPatterns: entry.oauth.emailAddressPatterns.map((p) => compileGlob(p)),
          checkIntervalMs: parseDuration(entry.oauth.checkInterval) ?? DEFAULT_CHECK_INTERVAL_MS,
        }
      : undefined;
    const route: ShareRoute = {
      token: entry.token,
      instance: entry.instance,
      target: upstream,
      ...(oauth ? { oauth } : {}),
    };
    routes.set(entry, route);
    return route;
  };

  const lookup = (token: string): ShareRoute | undefined => {
    const entry = directory.lookup(token);
    // A TCP share is private by its validator; checked again so none is ever served here.
    return entry && entry.shareMode === 'public' && entry.backendMode !== 'tcp' ? routeOf(entry) : undefined;
  };
  return { lookup, has: (token) => lookup(token) !== undefined };
}
