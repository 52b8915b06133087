import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { BackendTimeout } from '../../lib/backend-idle.ts';
import type { ExchangeRecorder } from '../../lib/exchange-observer.ts';
import { createBackendPipe, pushHeader, type BackendHeaders } from '../../lib/http-pipe.ts';
import { connectionListed, forwardedConnection } from '../../lib/hop-by-hop.ts';
import { isIdentityHeaderName } from '../../lib/identity-headers.ts';
import type { Logger } from '../../lib/logger.ts';
import type { BackendHandler, IdentityHeaderPolicy } from './types.ts';

export interface ProxyBackendOptions {
  readonly target: URL;
  /** `strip` (default) removes every `svc-auth-*` look-alike; `pass` trusts an OAuth frontend in front. */
  readonly identityHeaders?: IdentityHeaderPolicy;
  readonly logger: Logger;
  /** A target silent this long gets 504 (default 120 s, as the frontend's backend timeout). */
  readonly backendTimeoutMs?: number;
  /** Records the requests passed on (the agent's request inspector, for a private access). */
  readonly recorder?: ExchangeRecorder;
}

/**
 * The `proxy` share backend (the agent container of a share pod without OAuth, an Access, a private
 * access on one machine): forwards every request and WebSocket upgrade to the target URL through
 * the backend pipe (lib/http-pipe.ts: keep-alive connections, TLS verified for https targets). The
 * Host header is the target's, the X-Forwarded-* headers are extended, and identity look-alikes
 * are removed unless the OAuth frontend in front of this backend set them.
 */
export function proxyBackend(options: ProxyBackendOptions): BackendHandler {
  const pipe = createBackendPipe({ backendTimeoutMs: options.backendTimeoutMs ?? 120_000 });
  const strip = (options.identityHeaders ?? 'strip') === 'strip';
  const { target, logger, recorder } = options;
  return {
    request(req: IncomingMessage, res: ServerResponse) {
      const onError = (err: Error): void => {
        const timedOut = err instanceof BackendTimeout;
        logger.warn({ err: err.message, target: target.origin }, timedOut ? 'backend timeout' : 'backend unreachable');
        res.writeHead(timedOut ? 504 : 502, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(
          timedOut
            ? '504 Gateway Timeout: the share backend did not answer in time\n'
            : '502 Bad Gateway: the share backend did not answer\n',
        );
      };
      pipe.web(req, res, target, forwardedHeaders(req, strip), onError, undefined, undefined, recorder);
    },
    upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
      pipe.ws(req, socket, head, target, forwardedHeaders(req, strip));
    },
    close() {
      pipe.close();
    },
  };
}

/**
 * The request's headers for the target as a flat list: identity look-alikes (and their names in
 * `Connection`) dropped under `strip`, the peer appended to X-Forwarded-For, and X-Forwarded-Host,
 * -Proto and -Port added where no proxy in front (an ingress, the OAuth frontend) set them: this
 * backend listens on plain HTTP inside the cluster and cannot know the public scheme itself.
 */
export function forwardedHeaders(req: IncomingMessage, strip: boolean): BackendHeaders {
  const incoming = req.headers;
  const out: BackendHeaders = [];
  let forwardedFor: string | undefined;
  // The headers the client's Connection names are not passed on (lib/hop-by-hop.ts), nor their names.
  const listed = connectionListed(incoming.connection);
  for (const name in incoming) {
    const value = incoming[name];
    if (value === undefined || (listed.length > 0 && listed.includes(name))) continue;
    if (name === 'x-forwarded-for') {
      forwardedFor = String(value);
      continue;
    }
    if (name === 'connection' && typeof value === 'string') {
      const kept = forwardedConnection(value);
      if (kept !== undefined) out.push(name, kept);
      continue;
    }
    if (strip && isIdentityHeaderName(name)) continue;
    pushHeader(out, name, value);
  }
  const peer = req.socket.remoteAddress ?? '';
  out.push('x-forwarded-for', forwardedFor ? `${forwardedFor}, ${peer}` : peer);
  if (incoming['x-forwarded-host'] === undefined && incoming.host !== undefined)
    out.push('x-forwarded-host', incoming.host);
  if (incoming['x-forwarded-proto'] === undefined) out.push('x-forwarded-proto', 'http');
  if (incoming['x-forwarded-port'] === undefined) out.push('x-forwarded-port', String(req.socket.localPort ?? ''));
  return out;
}
