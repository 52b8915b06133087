/**
 * The one source of the provider types' defaults: scopes, and the real endpoints of the idp1
 * (web-search company) and idp2 (code-hosting platform) types. The endpoint keys of a type are
 * exactly the endpoints it uses; config may override each one (tests and air-gapped installs point
 * them at local servers), and no other endpoint key is accepted for that type.
 */
export const PROVIDER_DEFAULTS = {
  idp1: {
    scopes: ['openid', 'email'],
    endpoints: {
      authorize_url: 'https://accounts.google.com/o/oauth2/v2/auth',
      token_url: 'https://oauth2.googleapis.com/token',
      user_info_url: 'https://openidconnect.googleapis.com/v1/userinfo',
      revocation_url: 'https://oauth2.googleapis.com/revoke',
      /** Where logout without redirect_url sends the visitor: the provider's login page. */
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
  /** Endpoints come from the issuer's discovery document; `login_url` defaults to the issuer. */
  oidc: { scopes: ['openid', 'email', 'profile'], endpoints: {} },
} as const satisfies Record<string, { scopes: readonly string[]; endpoints: Record<string, string> }>;

/** Every endpoint setting of any type, as config keys. */
export const ENDPOINT_KEYS = ['authorize_url', 'token_url', 'user_info_url', 'revocation_url', 'api_base_url'] as const;

/** The resolved endpoints of an idp1 or idp2 provider: each one present (a default or an override). */
export type EndpointsOf<T extends 'idp1' | 'idp2'> = {
  readonly [K in keyof (typeof PROVIDER_DEFAULTS)[T]['endpoints']]: URL;
};
