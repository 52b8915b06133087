import type { ShareRoute } from './spec.ts';

/**
 * Where the frontend looks up the share behind a request's host. The sidecar reads a fixed list from
 * its mounted config file; the single-machine service passes the agent's live share table.
 */
export interface ShareSource {
  lookup(token: string): ShareRoute | undefined;
  /** Every token currently served: post-login and logout redirects may only target these hosts. */
  has(token: string): boolean;
}

export function staticShares(routes: readonly ShareRoute[]): ShareSource {
  const byToken = new Map(routes.map((r) => [r.token, r]));
  return { lookup: (token) => byToken.get(token), has: (token) => byToken.has(token) };
}
