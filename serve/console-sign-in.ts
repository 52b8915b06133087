import { createHmac, randomBytes } from 'node:crypto';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import type { ConsoleProviders } from '../controller/console/oauth-sign-in.ts';
import type { ConsoleSealer } from '../controller/console/session.ts';
import { createProviders } from '../sidecar/providers/index.ts';
import { createSealer } from '../sidecar/seal.ts';

/**
 * The console's sealer: the frontend's (sidecar/seal.ts) under keys derived for the console alone
 * from the given keys (the installation's `oauth` section, or `console.oauth` of the controller
 * alone), so nothing sealed for a share opens here or the other way. Without keys they are random
 * per start (a restart signs everyone out).
 */
export function consoleSealer(oauth: Pick<OAuthConfig, 'signingKey' | 'encryptionKey'> | undefined): ConsoleSealer {
  const derive = (key: string | undefined) =>
    key === undefined
      ? randomBytes(32).toString('base64url')
      : createHmac('sha256', key).update('svc-console v1').digest('base64url');
  return createSealer(derive(oauth?.signingKey), derive(oauth?.encryptionKey));
}

/** The configured providers (sidecar/providers) as the console's sign-in uses them. */
export function consoleProviders(oauth: Pick<OAuthConfig, 'providers'>): ConsoleProviders {
  const providers = createProviders(oauth.providers);
  const get = (name: string) => {
    const provider = providers.get(name);
    if (!provider) throw new Error(`no identity provider ${name}`);
    return provider;
  };
  return {
    names: [...providers.keys()],
    authorizationUrl: async (name, request) => {
      const provider = get(name);
      await provider.ready();
      return provider.authorizationUrl(request);
    },
    completeLogin: async (name, input) => (await get(name).completeLogin(input)).identity,
  };
}
