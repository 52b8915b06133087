/**
 * Real endpoints of the idp1 (web-search company) and idp2 (code-hosting platform) provider types.
 * Config may override each one, so tests and air-gapped installs point them at local servers.
 */
export interface ProviderEndpoints {
  readonly authorize_url?: URL;
  readonly token_url?: URL;
  readonly user_info_url?: URL;
  readonly revocation_url?: URL;
  readonly api_base_url?: URL;
  /** Where logout without redirect_url sends the visitor: the provider's login page. */
  readonly login_url?: URL;
}

export const PROVIDER_DEFAULTS = {
  idp1: {
    scopes: ['openid', 'email'],
    endpoints: {
      authorize_url: 'https://accounts.google.com/o/oauth2/v2/auth',
      token_url: 'https://oauth2.googleapis.com/token',
      user_info_url: 'https://openidconnect.googleapis.com/v1/userinfo',
      revocation_url: 'https://oauth2.googleapis.com/revoke',
      login_url: 'https://accounts.google.com/ServiceLogin',
    },
  },
  idp2: {
    scopes: ['user:email'],
    endpoints: {
      authorize_url: 'https://github.com/login/oauth/authorize',
      token_url: 'https://github.com/login/oauth/access_token',
      api_base_url: 'https://api.github.com',
      login_url: 'https://github.com/login',
    },
  },
  oidc: { scopes: ['openid', 'email', 'profile'], endpoints: {} },
} as const satisfies Record<string, { scopes: readonly string[]; endpoints: Record<string, string> }>;
