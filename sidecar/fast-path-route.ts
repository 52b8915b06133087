import type { FastRequest } from './fast-path/request-head.ts';
import type { FastRoute } from './fast-path/fast-path.ts';
import type { FrontendParts } from './frontend-parts.ts';
import { shareAuthPath } from './handover.ts';
import { routableHostname, shareHostNamed } from './host-routing.ts';
import { backendHeaders } from './proxy.ts';
import type { Session } from './session.ts';

/**
 * The fast path's route table (fast-path/fast-path.ts): a request it may forward is one to a share
 * with a plain-HTTP backend or a tunnelled one, by a visitor whose session needs no I/O (or a share
 * without login), and not on the share's own login path. Anything else is undefined: Node's server
 * takes it (frontend-router.ts). A share the agent's request inspector records is recorded here too
 * (fast-path/recording.ts); a tunnelled share is recorded by its agent.
 */
export function fastPathRoute(parts: FrontendParts): (request: FastRequest) => FastRoute | undefined {
  const { auth, cookieName, cookies, endpointUrl, routing } = parts;
  return (request) => {
    const share = shareHostNamed(routableHostname(request.host, request.url), routing)?.share;
    const target = share && (share.target instanceof URL ? share.target : share.target.streams);
    if (!share || !target || (target instanceof URL && target.protocol !== 'http:')) return undefined;
    let session: Session | undefined;
    if (share.oauth) {
      if (shareAuthPath(request.url, share.oauth.provider)) return undefined;
      session = auth?.currentSession(request, share, share.oauth);
      if (!session) return undefined;
    }
    return {
      target,
      share: share.token,
      headers: backendHeaders(request, cookieName, session, endpointUrl),
      cookies: cookies.forShare(share.token),
      recorder: share.recorder,
    };
  };
}
