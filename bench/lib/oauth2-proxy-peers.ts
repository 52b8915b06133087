import { devInteractionsLogin } from './dev-login.ts';
import { FIXED_BODY_START } from './fixed-backend.ts';
import { CookieJar, request } from './http.ts';
import type { Target } from './measure.ts';
import { oauth2ProxyBinary, oauth2ProxyVersion, startOAuth2Proxy, type OAuth2ProxyBuild } from './oauth2-proxy.ts';

/** The identity provider the peers log in through, as the frontend does. */
type Idp = { readonly issuer: string; readonly clientId: string; readonly clientSecret: string };

/** The builds measured, by their names in the report (bench/lib/frontend-report.ts finds them by these). */
const PEERS: readonly { build: OAuth2ProxyBuild; name: string }[] = [
  { build: 'oauth2-proxy', name: `oauth2-proxy ${oauth2ProxyVersion()} (defaults)` },
  { build: 'oauth2-proxy-pool64', name: `oauth2-proxy ${oauth2ProxyVersion()} (64 idle upstream conns)` },
];

/** One build on `port`, logged in through the provider's form: its target carries the session cookie. */
async function startPeer(peer: (typeof PEERS)[number], backend: URL, idp: Idp, port: number): Promise<Target> {
  const proc = await startOAuth2Proxy({ build: peer.build, port, upstream: backend, idp });
  const start = new URL(`http://127.0.0.1:${port}/`);
  const unauthenticated = await request(start);
  if (unauthenticated.status !== 302 || !unauthenticated.headers.location?.startsWith(idp.issuer.replace(/\/$/, '')))
    throw new Error(`${peer.build} did not redirect to the provider (status ${unauthenticated.status})`);
  const jar = new CookieJar();
  const login = await devInteractionsLogin({ start, jar, login: 'bench@example.com' });
  const cookie = jar.header(start);
  if (login.reply.status !== 200 || !login.reply.body.startsWith(FIXED_BODY_START) || !cookie)
    throw new Error(`${peer.build}: login did not end on the backend's page (status ${login.reply.status})`);
  return {
    name: peer.name,
    url: start.href,
    headers: { cookie },
    proxyPids: () => [proc.pid],
    memoryPids: () => [proc.pid],
  };
}

/**
 * oauth2-proxy in front of the same backend, each build logged in through the same provider form
 * as the frontend. A build that is missing is left out with a note (bench/provide-go-tools.sh).
 */
export async function startPeers(backend: URL, idp: Idp, ports: readonly number[]): Promise<Target[]> {
  const targets: Target[] = [];
  for (const [i, peer] of PEERS.entries()) {
    const port = ports[i];
    if (!oauth2ProxyBinary(peer.build) || port === undefined) {
      process.stderr.write(
        `${peer.build} ${oauth2ProxyVersion()} not built (run bench/provide-go-tools.sh): left out\n`,
      );
      continue;
    }
    targets.push(await startPeer(peer, backend, idp, port));
  }
  return targets;
}
