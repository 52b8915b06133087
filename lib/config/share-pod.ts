import { deriveShareCredential, deriveShareKeys, type ShareIdentity } from '../share-keys.ts';
import type { OAuthConfig } from './frontend.ts';

/**
 * A share pod's `oauth:` section, made from the installation's: the same settings, but this share's
 * own keys (derived, lib/share-keys.ts) in place of the installation's, no client secret in any
 * provider, no internal listener, and the auth endpoint's internal URL with this share's credential
 * (`auth_service`). Nothing in it opens or makes another share's sessions or acts as the OAuth client.
 */
export function sharePodOAuthSection(
  installationSection: Record<string, unknown>,
  installation: Pick<OAuthConfig, 'signingKey' | 'encryptionKey'>,
  share: ShareIdentity,
  authServiceUrl: string,
): Record<string, unknown> {
  const {
    signing_key: _signing,
    encryption_key: _encryption,
    internal_address: _internal,
    providers,
    ...rest
  } = installationSection;
  const keys = deriveShareKeys(installation, share);
  return {
    ...rest,
    signing_key: keys.signingKey,
    encryption_key: keys.encryptionKey,
    providers: Array.isArray(providers)
      ? providers.map((p: unknown) => {
          if (typeof p !== 'object' || p === null) return p;
          const { client_secret: _secret, ...kept } = p as Record<string, unknown>;
          return kept;
        })
      : providers,
    auth_service: { url: authServiceUrl, credential: deriveShareCredential(installation, share) },
  };
}
