/**
 * The installation's OAuth settings the operator tests and bench:operator give the operator (its
 * frontend Secret), with secret values that tests look for in logs, status and tenant namespaces.
 */
export const DOMAIN = 'share.test';
/** Values that must never appear in logs, status or Events. */
export const SECRET_VALUES = {
  clientSecret: 'client-secret-that-must-never-leak-0001',
  signingKey: 'signing-key-0123456789-0123456789-abcdef',
  encryptionKey: 'encryption-key-0123456789-xyz',
};

/** The installation's `oauth:` section (endpoint_url gives share URLs their scheme and port). */
export function oauthSection(issuer = 'http://127.0.0.1:5556'): Record<string, unknown> {
  return {
    bind_address: '0.0.0.0:8080',
    endpoint_url: 'http://auth.share.test:8443',
    cookie_name: 'svc-auth-session',
    cookie_domain: DOMAIN,
    session_lifetime: '6h',
    intermediate_lifetime: '5m',
    signing_key: SECRET_VALUES.signingKey,
    encryption_key: SECRET_VALUES.encryptionKey,
    providers: [
      {
        name: 'dev',
        type: 'oidc',
        client_id: 'svc-test',
        client_secret: SECRET_VALUES.clientSecret,
        scopes: ['openid', 'email', 'profile'],
        issuer,
        supports_pkce: true,
      },
    ],
  };
}
