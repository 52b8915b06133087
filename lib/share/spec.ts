import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ShareCookies } from '../backend-cookies.ts';
import type { ExchangeRecorder } from '../exchange-observer.ts';
import type { EmailGlob } from '../glob.ts';
import type { TunnelStreams } from '../tunnel/stream-target.ts';

export type ShareMode = 'public' | 'private';
export const SHARE_MODES: readonly ShareMode[] = ['public', 'private'];
/** proxy: forward to a URL; web: serve a folder; tcp: relay TCP connections to `host:port` (private only). */
export type BackendMode = 'proxy' | 'web' | 'tcp';
export const BACKEND_MODES: readonly BackendMode[] = ['proxy', 'web', 'tcp'];
/** The backend modes of HTTP shares, those a public frontend or a share pod can serve. */
export const HTTP_BACKEND_MODES: readonly BackendMode[] = ['proxy', 'web'];

export interface ShareOAuth {
  readonly provider: string;
  readonly emailPatterns: readonly EmailGlob[];
  readonly checkIntervalMs: number;
}

/**
 * Where the frontend sends a share's requests when they do not go to a URL: the tunnel to the agent
 * that holds the share (sidecar/tunnel). It answers failures itself (offline, busy, unreachable).
 */
export interface ShareUpstream {
  /**
   * `setCookie`: a refreshed session cookie to add to the response; `cookies`: which of the
   * backend's Set-Cookie headers reach the visitor (lib/backend-cookies.ts).
   */
  web(req: IncomingMessage, res: ServerResponse, setCookie: string | undefined, cookies?: ShareCookies): void;
  ws(req: IncomingMessage, socket: Duplex, head: Buffer, cookies?: ShareCookies): void;
  /** The tunnel's streams, for requests the frontend's fast path takes; without it every request goes through `web`. */
  readonly streams?: TunnelStreams;
}

/** One share the frontend serves at `<token>.<cookie_domain>`. */
export interface ShareRoute {
  readonly token: string;
  /**
   * The identity of this share, which sessions are bound to: it changes whenever the token is given
   * to a new share (another account's, or the same token created again), so a login made for one
   * share is never accepted by the next holder of its token. The share registry mints one per
   * registration; a Share object's is its uid; a config file names it or uses the token.
   */
  readonly instance: string;
  /** A backend URL (proxied), or the tunnel of the environment that publishes the share. */
  readonly target: URL | ShareUpstream;
  readonly oauth?: ShareOAuth;
  /**
   * Records the share's requests where the frontend proxies them to a URL target (the agent's
   * request inspector); such a share is left to Node's server, not the fast path.
   */
  readonly recorder?: ExchangeRecorder;
}

/** A share proxied to a backend URL (config files, the agent on one machine). */
export type DirectShareRoute = ShareRoute & { readonly target: URL };

export const DEFAULT_CHECK_INTERVAL = '3h';
/** A share token is the first DNS label of the share's host. */
export const SHARE_TOKEN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/** A share instance id in a config file: printable, no spaces, at most 128 characters. */
export const SHARE_INSTANCE = /^[\x21-\x7e]{1,128}$/;

export const SHARE_KEYS = [
  'token',
  'instance',
  'target',
  'oauth_provider',
  'oauth_email_address_patterns',
  'oauth_check_interval',
];
