import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { stripIdentityHeaders } from '../../lib/identity-headers.ts';
import { FAILURE_STATUS, forwardRequest, forwardUpgrade, rejectSocket } from '../../lib/tunnel/forward.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../../lib/tunnel/protocol.ts';
import type { StreamTarget } from '../../lib/tunnel/stream-target.ts';
import type { BackendHandler } from '../backends/types.ts';

export interface RemoteAccessOptions {
  /** The access connection's current stream target (undefined while disconnected). */
  target(): StreamTarget | undefined;
  readonly shareToken: string;
}

/**
 * The handler behind a private access to a share of another machine of the account: every request
 * (and websocket) goes to the installation over the access connection, addressed to the share's
 * token, and the installation forwards it into the owner's tunnel. Like a local access it removes
 * identity look-alikes and records the caller in X-Forwarded-*.
 */
export function remoteAccessHandler(options: RemoteAccessOptions): BackendHandler {
  const prepare = (req: IncomingMessage) => {
    stripIdentityHeaders(req.headers);
    const peer = req.socket.remoteAddress ?? '';
    const forwardedFor = req.headers['x-forwarded-for'];
    req.headers['x-forwarded-for'] = forwardedFor ? `${String(forwardedFor)}, ${peer}` : peer;
    req.headers['x-forwarded-host'] = req.headers.host ?? '';
    req.headers['x-forwarded-proto'] = 'http';
    req.headers.host = `${options.shareToken}.access.invalid`;
  };
  return {
    request(req: IncomingMessage, res: ServerResponse) {
      const target = options.target();
      if (!target) return fail(res, 503, 'the installation is not connected; retrying');
      prepare(req);
      forwardRequest(req, res, target, {
        route: 'access',
        idleMs: DEFAULT_TUNNEL_LIMITS.streamIdleMs,
        fail: (r, failure) => fail(r, FAILURE_STATUS[failure], `the share did not answer (${failure})`),
      });
    },
    upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
      const target = options.target();
      if (!target) return rejectSocket(socket, 503, 'Service Unavailable');
      prepare(req);
      forwardUpgrade(req, socket, head, target, 'access');
    },
    close() {},
  };
}

function fail(res: ServerResponse, status: number, text: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    ...(status === 503 ? { 'retry-after': '5' } : {}),
  });
  res.end(`${status}: ${text}\n`);
}
