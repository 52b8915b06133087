import { join, type ConfigReader } from '../../lib/config-reader.ts';
import { readSealingKeys } from '../../lib/config/frontend.ts';
import { readProviders, type ProviderConfig } from '../../lib/config/providers.ts';

/**
 * `console.oauth` of `svc controller` alone (docs/controller.md, "The console"): the identity
 * providers the console offers for sign-in, in the frontend's provider format, and the keys its
 * cookies are sealed under (so sign-ins survive a restart and hold across replicas). Each
 * provider must have `<console origin>/console/oauth/<name>/callback` registered as a redirect URI.
 */
export interface ConsoleOAuthConfig {
  readonly providers: readonly ProviderConfig[];
  readonly signingKey: string;
  readonly encryptionKey: string;
}

const PATH = 'console.oauth';
const KEYS = ['providers', 'signing_key', 'encryption_key'];

/** Reads `console.oauth`, every problem recorded in `r` with its field path (secrets never quoted). */
export function readConsoleOAuth(r: ConfigReader, value: unknown): ConsoleOAuthConfig | undefined {
  const o = r.object(value, PATH);
  if (!o) return undefined;
  r.unknownKeys(o, PATH, KEYS);
  const { signingKey, encryptionKey } = readSealingKeys(r, o, PATH);
  const providers = readProviders(r, o.providers, join(PATH, 'providers'));
  if (!signingKey || !encryptionKey || !providers) return undefined;
  return { providers, signingKey, encryptionKey };
}
