import { SvcError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { ACCESS_PATH, TUNNEL_PATH, shareUrl, tunnelUrl } from '../lib/tunnel/protocol.ts';
import type { PublicFrontendConfig } from './config.ts';
import { isRegistrationStore } from './registration-store.ts';
import { ShareRegistry } from './share-registry.ts';
import { reservedTokens } from '../lib/share/reserved-tokens.ts';
import type { ControllerStore } from './store.ts';
import type { TunnelOffer } from './tunnel-api.ts';

/**
 * What `svc controller` with a `public_frontend` section offers: the share registry in its store
 * (file or Kubernetes), the frontend replicas' credential for the frontend API, and what agents are
 * told on `/tunnel/info`: absolute tunnel and access URLs on the frontend's endpoint host (the
 * replicas accept tunnels there) and share URLs `<scheme>://<token>.<domain>[:port]`.
 */
export async function publicFrontendTunnel(
  store: ControllerStore,
  config: PublicFrontendConfig,
  logger: Logger,
): Promise<{ registry: ShareRegistry; offer: TunnelOffer; frontendCredential: string }> {
  if (!isRegistrationStore(store)) {
    throw new SvcError('invalid_config', 'public_frontend: this store cannot keep the share registry');
  }
  const registry = await ShareRegistry.open(store, config.providers, logger, {
    ...(config.tokenQuarantineMs ? { quarantineMs: config.tokenQuarantineMs } : {}),
    // The endpoint's own host may be a share host's sibling (agents tunnel there).
    reservedTokens: reservedTokens([config.endpointUrl.hostname, ...(config.reservedHosts ?? [])], config.domain),
  });
  const { endpointUrl, domain } = config;
  const base = { protocol: endpointUrl.protocol, port: endpointUrl.port };
  return {
    registry,
    frontendCredential: config.credential,
    offer: {
      tunnelUrl: tunnelUrl(endpointUrl, TUNNEL_PATH),
      accessUrl: tunnelUrl(endpointUrl, ACCESS_PATH),
      shareUrl: (token) => shareUrl(token, domain, base),
    },
  };
}
