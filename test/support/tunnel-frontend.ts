import { listenHandler, type RunningListener } from '../../agent/backends/listener.ts';
import { startAccessClient, type RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import { remoteAccessHandler } from '../../agent/tunnel/remote-access.ts';
import { createLogger, type Logger } from '../../lib/logger.ts';
import type { EnvironmentIdentity, PublishedShare, ShareDirectory } from '../../lib/tunnel/directory.ts';
import { ACCESS_PATH, tunnelUrl, type TunnelLimits, type TunnelTransport } from '../../lib/tunnel/protocol.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import { startPeerServer, type PeerServer } from '../../sidecar/tunnel/peer-server.ts';
import { tunnelledShares } from '../../sidecar/tunnel/routes.ts';
import { until } from './until.ts';

export interface TunnelFrontend {
  readonly frontend: RunningFrontend;
  readonly endpoint: TunnelEndpoint;
  readonly locator: LocalTunnels;
}

/**
 * The real frontend on 127.0.0.1:0 serving `*.<domain>` from agents' tunnels: the tunnel endpoint
 * on its upgrades, the shares `directory` names routed to the tunnels it holds.
 */
export async function startTunnelFrontend(options: {
  domain: string;
  directory: ShareDirectory;
  limits: TunnelLimits;
  logger: Logger;
}): Promise<TunnelFrontend> {
  const { domain, directory, limits, logger } = options;
  const locator = new LocalTunnels(limits.maxTunnelsPerEnvironment);
  const endpoint = new TunnelEndpoint({ directory, locator, limits, logger });
  const frontend = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`http://${domain}:${port}`),
    domain,
    shares: tunnelledShares({ directory, locator, limits, logger }),
    logger,
    onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
  });
  return { frontend, endpoint, locator };
}

export interface TunnelFrontendWithPeer extends TunnelFrontend {
  readonly peer: PeerServer;
}

/**
 * Environment tokens of two accounts (mallory with two environments, alice with one) and the
 * identities they prove; a fresh copy each call, so a test may add to it.
 */
export function malloryAndAlice() {
  const tokens = {
    mallory: 'svcv_mmmmmmmmmmmm_secret-of-environment-m-0123456789abcdefghijk',
    mallorySecond: 'svcv_nnnnnnnnnnnn_secret-of-environment-n-0123456789abcdefghijk',
    alice: 'svcv_aaaaaaaaaaaa_secret-of-environment-a-0123456789abcdefghijk',
  };
  const identities: Record<string, EnvironmentIdentity> = {
    [tokens.mallory]: { envZId: 'mmmmmmmmmmmm', accountId: 'mallory' },
    [tokens.mallorySecond]: { envZId: 'nnnnnnnnnnnn', accountId: 'mallory' },
    [tokens.alice]: { envZId: 'aaaaaaaaaaaa', accountId: 'alice' },
  };
  return { tokens, identities };
}

/** A share as the controller's registry publishes it (its instance named after its token). */
export function publishedShare(
  token: string,
  envZId: string,
  accountId: string,
  shareMode: 'public' | 'private',
  backendMode: 'proxy' | 'tcp' = 'proxy',
): PublishedShare {
  return { token, instance: `${token}-1`, envZId, accountId, shareMode, backendMode };
}

/**
 * A directory over `shares` and `identities`, read at each lookup (a test may add to them later);
 * nothing is ever revoked.
 */
export function mapDirectory(
  shares: Record<string, PublishedShare>,
  identities: Record<string, EnvironmentIdentity>,
): ShareDirectory {
  return {
    lookup: (token) => shares[token],
    authenticate: (token) => Promise.resolve(identities[token]),
    onRevoked: () => () => undefined,
  };
}

/**
 * `startTunnelFrontend` plus the replica peer listener (127.0.0.1:0, `credential`) forwarding into
 * the tunnels this frontend holds, as the replica holding a tunnel serves the others' streams.
 */
export async function startTunnelFrontendWithPeer(options: {
  domain: string;
  directory: ShareDirectory;
  limits: TunnelLimits;
  logger: Logger;
  credential: string;
}): Promise<TunnelFrontendWithPeer> {
  const installation = await startTunnelFrontend(options);
  const peer = await startPeerServer({
    listen: { host: '127.0.0.1', port: 0 },
    credential: options.credential,
    local: (envZId) => installation.locator.find(envZId),
    limits: options.limits,
    logger: options.logger,
  });
  return { ...installation, peer };
}

/** Environment tokens of two machines of one account: `owner` holds the shares, `second` accesses them. */
export const TWO_MACHINES = {
  owner: 'svcv_aaaaaaaaaaaa_secret-of-environment-a-0123456789abcdefghijk',
  second: 'svcv_bbbbbbbbbbbb_secret-of-environment-b-0123456789abcdefghijk',
};

/** A directory of `pub1` (public) and `priv1` (private), both of the owner of `TWO_MACHINES`. */
export function twoMachineDirectory(): ShareDirectory {
  const identities: Record<string, EnvironmentIdentity> = {
    [TWO_MACHINES.owner]: { envZId: 'aaaaaaaaaaaa', accountId: 'alice' },
    [TWO_MACHINES.second]: { envZId: 'bbbbbbbbbbbb', accountId: 'alice' },
  };
  return {
    lookup: (token: string): PublishedShare | undefined =>
      token === 'pub1' || token === 'priv1'
        ? {
            token,
            instance: `${token}-1`,
            envZId: 'aaaaaaaaaaaa',
            accountId: 'alice',
            shareMode: token === 'pub1' ? 'public' : 'private',
            backendMode: 'proxy',
          }
        : undefined,
    authenticate: (token: string) => Promise.resolve(identities[token]),
    onRevoked: () => () => undefined,
  };
}

/** The second machine of `TWO_MACHINES` reaching `priv1`: its access client and local listener. */
export interface PrivateAccess {
  readonly access: RunningAccessClient;
  readonly listener: RunningListener;
}

/**
 * Connects the second machine's access client to the frontend on `port` (over `transport`) and
 * opens its local listener for `priv1`, as `svc access` does; resolves once the access is up.
 */
export async function startPrivateAccess(port: number, transport: TunnelTransport): Promise<PrivateAccess> {
  const access = startAccessClient({
    transport,
    url: tunnelUrl(`http://127.0.0.1:${port}`, ACCESS_PATH),
    token: TWO_MACHINES.second,
    logger: createLogger('access', { level: 'silent' }),
  });
  await until(() => access.target() !== undefined, 'the access connection', 10_000, 25);
  const listener = await listenHandler(remoteAccessHandler({ target: () => access.target(), shareToken: 'priv1' }), {
    host: '127.0.0.1',
    port: 0,
  });
  return { access, listener };
}
