import type { ShareFieldNames } from './validate.ts';

/**
 * How each surface names a share's fields (docs/design.md, "One share validator"). Only the names
 * differ: the rules and the messages are validateShareSpec's.
 */

/** The API body (`/api/v1/agent/share`), and the product's own names. */
export const API_SHARE_FIELDS: ShareFieldNames = {
  token: 'token',
  shareMode: 'shareMode',
  backendMode: 'backendMode',
  target: 'target',
  oauthProvider: 'oauthProvider',
  oauthEmailAddressPatterns: 'oauthEmailAddressPatterns',
  oauthCheckInterval: 'oauthCheckInterval',
  webListing: 'webListing',
  webVolume: 'webVolume',
};

/** `svc share public|private [flags] <target>`. */
export const CLI_SHARE_FIELDS: ShareFieldNames = {
  token: '<token>',
  shareMode: 'svc share public|private',
  backendMode: '--backend-mode',
  target: '<target>',
  oauthProvider: '--oauth-provider',
  oauthEmailAddressPatterns: '--oauth-email-address-pattern',
  oauthCheckInterval: '--oauth-check-interval',
  webListing: '--web-listing',
  webVolume: 'web volume',
};

/** A `Share` object (crds/): its spec. */
export const CRD_SHARE_FIELDS: ShareFieldNames = {
  token: 'spec.token',
  shareMode: 'spec.shareMode',
  backendMode: 'spec.backendMode',
  target: 'spec.target',
  oauthProvider: 'spec.oauth.provider',
  oauthEmailAddressPatterns: 'spec.oauth.emailAddressPatterns',
  oauthCheckInterval: 'spec.oauth.checkInterval',
  webListing: 'spec.webListing',
  webVolume: 'spec.webVolume',
};

/** A frontend config file's `shares[i]` (seed option names, snake_case). */
export const CONFIG_FILE_SHARE_FIELDS: ShareFieldNames = {
  token: 'token',
  shareMode: 'share_mode',
  backendMode: 'backend_mode',
  target: 'target',
  oauthProvider: 'oauth_provider',
  oauthEmailAddressPatterns: 'oauth_email_address_patterns',
  oauthCheckInterval: 'oauth_check_interval',
  webListing: 'web_listing',
  webVolume: 'web_volume',
};
