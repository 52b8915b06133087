import { systemClock, type Clock } from '../../lib/clock.ts';
import type { ProviderConfig } from '../../lib/config/providers.ts';
import { idp1Provider } from './idp1.ts';
import { idp2Provider } from './idp2.ts';
import { oidcProvider } from './oidc.ts';
import type { Provider } from './types.ts';

function createProvider(config: ProviderConfig, clock: Clock): Provider {
  switch (config.type) {
    case 'idp1':
      return idp1Provider(config);
    case 'idp2':
      return idp2Provider(config);
    case 'oidc':
      return oidcProvider(config, clock);
  }
}

/** The configured providers by name; `clock` ages what they keep (an oidc provider's key set). */
export function createProviders(configs: readonly ProviderConfig[], clock: Clock = systemClock): Map<string, Provider> {
  return new Map(configs.map((c) => [c.name, createProvider(c, clock)]));
}
