import { valueOrThrow } from '../../lib/errors.ts';
import { API_SHARE_FIELDS } from '../../lib/share/surfaces.ts';
import { validateShareSpec, type ShareRules } from '../../lib/share/validate.ts';
import type { AccessSpec, ShareSpec } from '../../lib/kube/resources.ts';
import { API_REQUEST_FIELDS, validateBindAddress } from '../requests.ts';
import type { RemoteShareArgs } from './executor.ts';

/** The Access Service's port when `/agent/access` names no bind address. */
export const DEFAULT_BIND_PORT = 8080;

/** What the environment agent can create: the API cannot name the volume a web share would serve. */
const KUBE_SHARE_RULES: ShareRules = {
  backendModes: ['proxy'],
  unsupportedBackend:
    'only proxy shares can be created remotely in a Kubernetes environment (a web share serves a volume: create the Share object with spec.webVolume)',
};

/**
 * A Share spec from `/agent/share` arguments, through the one share validator with the API's field
 * names: the same bad body gets the same problems as from a single-machine agent
 * (test/contracts/remote-executor.ts). Only proxy shares can be created remotely; the OAuth provider
 * is checked by the operator, which knows the installation's providers.
 */
export function shareSpecFromArgs(args: RemoteShareArgs, token: string): ShareSpec & { token: string } {
  const spec = valueOrThrow(
    validateShareSpec({ ...args }, API_SHARE_FIELDS, KUBE_SHARE_RULES),
    'invalid_share',
    'invalid share',
  );
  return {
    shareMode: spec.shareMode,
    backendMode: 'proxy',
    target: spec.target,
    token,
    ...(spec.oauth
      ? {
          oauth: {
            provider: spec.oauth.provider,
            ...(spec.oauth.emailAddressPatterns.length
              ? { emailAddressPatterns: [...spec.oauth.emailAddressPatterns] }
              : {}),
            ...(spec.oauth.checkInterval !== undefined ? { checkInterval: spec.oauth.checkInterval } : {}),
          },
        }
      : {}),
  };
}

/**
 * An Access spec from `/agent/access` arguments: the port of `bindAddress` (the same `ip:port` rule
 * as a single-machine access, agent/requests.ts) becomes spec.bindPort, the access Service's port.
 */
export function accessSpecFromArgs(args: { shareToken: string; bindAddress?: string }): AccessSpec & {
  shareToken: string;
} {
  if (args.bindAddress === undefined) return { shareToken: args.shareToken, bindPort: DEFAULT_BIND_PORT };
  const address = valueOrThrow(
    validateBindAddress(args.bindAddress, API_REQUEST_FIELDS, { servicePort: true }),
    'invalid_bind',
    'invalid access',
  );
  return { shareToken: args.shareToken, bindPort: address.port };
}
