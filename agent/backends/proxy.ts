import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import { stripIdentityHeaders } from '../../lib/identity-headers.ts';
import type { Logger } from '../../lib/logger.ts';
import type { BackendHandler, IdentityHeaderPolicy } from './types.ts';

export interface ProxyBackendOptions {
  readonly target: URL;
  /** `strip` (default) removes every `svc-auth-*` look-alike; `pass` trusts an OAuth frontend in front. */
  readonly identityHeaders?: IdentityHeaderPolicy;
  readonly logger: Logger;
}

/**
 * The `proxy` share backend: forwards every request (and WebSocket upgrade) to the target URL. The
 * Host header is rewritten to the target's, the usual X-Forwarded-* headers are added, and identity
 * look-alikes are removed unless the OAuth frontend in front of this backend set them.
 */
export function proxyBackend(options: ProxyBackendOptions): BackendHandler {
  const proxy = createProxyServer({
    target: options.target.href,
    changeOrigin: true,
    xfwd: true,
    ws: true,
    secure: true,
    proxyTimeout: 120_000,
  });
  proxy.on('error', (err, _req, res) => {
    options.logger.warn({ err: err.message, target: options.target.origin }, 'backend unreachable');
    if ('writeHead' in res) {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('502 Bad Gateway: the share backend did not answer\n');
      } else res.destroy();
    } else res.destroy();
  });
  const strip = (options.identityHeaders ?? 'strip') === 'strip';
  return {
    request(req: IncomingMessage, res: ServerResponse) {
      if (strip) stripIdentityHeaders(req.headers);
      proxy.web(req, res);
    },
    upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
      if (strip) stripIdentityHeaders(req.headers);
      proxy.ws(req, socket, head);
    },
    close() {
      proxy.close();
    },
  };
}
