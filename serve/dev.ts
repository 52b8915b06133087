import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigReader } from '../lib/config-reader.ts';
import { readOAuth, type OAuthConfig } from '../lib/config/frontend.ts';
import { formatAddress, type ListenAddress } from '../lib/listen.ts';

export const DEV_PROVIDER = 'dev';

/**
 * The ready OAuth section of `svc serve --dev`: one `oidc` provider named `dev` (the bundled
 * development identity provider), the callback host `auth.<domain>` on the frontend's port, cookie
 * domain `<domain>`. The keys are random per data directory and kept in `dev-keys.json` (0600), so
 * a restart keeps visitors logged in. Built through `readOAuth`, the same validation as a file.
 */
export function devOAuthConfig(
  dataDir: string,
  listen: ListenAddress,
  domain: string,
  idp: { issuer: URL; clientId: string; clientSecret: string },
): OAuthConfig {
  const keys = devKeys(dataDir);
  const r = new ConfigReader();
  const oauth = readOAuth(r, {
    bind_address: formatAddress(listen),
    endpoint_url: `http://auth.${domain}:${listen.port}`,
    cookie_name: 'svc-auth-session',
    cookie_domain: domain,
    session_lifetime: '24h',
    intermediate_lifetime: '5m',
    signing_key: keys.signing_key,
    encryption_key: keys.encryption_key,
    providers: [
      {
        name: DEV_PROVIDER,
        type: 'oidc',
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        scopes: ['openid', 'email', 'profile'],
        issuer: idp.issuer.href,
        supports_pkce: true,
      },
    ],
  });
  r.finish('the --dev configuration');
  return oauth as OAuthConfig;
}

function devKeys(dataDir: string): { signing_key: string; encryption_key: string } {
  const path = join(dataDir, 'dev-keys.json');
  try {
    const keys = JSON.parse(readFileSync(path, 'utf8')) as { signing_key?: unknown; encryption_key?: unknown };
    if (typeof keys.signing_key === 'string' && typeof keys.encryption_key === 'string') {
      return { signing_key: keys.signing_key, encryption_key: keys.encryption_key };
    }
  } catch {
    // First start in this data directory: make keys below.
  }
  const keys = {
    signing_key: randomBytes(32).toString('base64url'),
    encryption_key: randomBytes(32).toString('base64url'),
  };
  writeFileSync(path, `${JSON.stringify(keys)}\n`, { mode: 0o600 });
  return keys;
}

/**
 * `--dev`: starts the bundled development identity provider on a free loopback port and returns the
 * ready OAuth section for a frontend at `listen`. `endpoint()` names the frontend's public URL once
 * it listens (the provider's redirect URI names the bound port, which port 0 only reveals then);
 * `consoleCallback()` the installation console's redirect URI, once the API listens.
 */
export async function startDevLogin(
  dataDir: string,
  listen: ListenAddress,
  domain: string,
  endpoint: () => URL | undefined,
  consoleCallback: () => string | undefined = () => undefined,
): Promise<{ oauth: OAuthConfig; loginUrl: string; close(): Promise<void> }> {
  const { startDevIdentityProvider } = await import('../devidp/provider.ts');
  const idp = await startDevIdentityProvider({
    port: 0,
    redirectUris: () => {
      const bound = endpoint();
      const console = consoleCallback();
      return [...(bound ? [new URL(`/${DEV_PROVIDER}/auth/callback`, bound).href] : []), ...(console ? [console] : [])];
    },
  });
  return { oauth: devOAuthConfig(dataDir, listen, domain, idp), loginUrl: idp.issuer.href, close: () => idp.close() };
}
