import { ConfigReader, join, loadYamlFile } from '../config-reader.ts';
import { isLoopbackHost } from '../net.ts';
import { SHARE_KEYS, readShareOptions, type ShareRoute } from '../share/spec.ts';
import { PROVIDER_DEFAULTS, type ProviderEndpoints } from './provider-defaults.ts';

export type ProviderType = 'idp1' | 'idp2' | 'oidc';
export const PROVIDER_TYPES: readonly ProviderType[] = ['idp1', 'idp2', 'oidc'];

export interface ProviderConfig {
  readonly name: string;
  readonly type: ProviderType;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scopes: readonly string[];
  /** oidc only. */
  readonly issuer?: URL;
  /** oidc only: send a PKCE S256 challenge. */
  readonly supportsPkce: boolean;
  /** idp1/idp2: the provider's URLs, defaulting to the real provider's, overridable for local servers. */
  readonly endpoints: ProviderEndpoints;
  /** Named opt-out: allow a plain-http issuer or endpoint that is not on a loopback host. */
  readonly insecureAllowHttp: boolean;
}

export interface OAuthConfig {
  readonly bindAddress: { host: string; port: number };
  readonly endpointUrl: URL;
  readonly cookieName: string;
  readonly cookieDomain: string;
  readonly sessionLifetimeMs: number;
  readonly intermediateLifetimeMs: number;
  readonly signingKey: string;
  readonly encryptionKey: string;
  readonly providers: readonly ProviderConfig[];
}

export interface FrontendConfig {
  readonly oauth: OAuthConfig;
  readonly shares: readonly ShareRoute[];
  /** Separate listener for /metrics, /healthz, /readyz; absent means no metrics listener. */
  readonly metricsAddress?: { host: string; port: number };
}

const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const DOMAIN = /^\.?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export const TOP_KEYS = ['oauth', 'shares', 'metrics_address'];
export const OAUTH_KEYS = [
  'bind_address',
  'endpoint_url',
  'cookie_name',
  'cookie_domain',
  'session_lifetime',
  'intermediate_lifetime',
  'signing_key',
  'encryption_key',
  'providers',
];
export const PROVIDER_KEYS = [
  'name',
  'type',
  'client_id',
  'client_secret',
  'scopes',
  'issuer',
  'supports_pkce',
  'authorize_url',
  'token_url',
  'user_info_url',
  'revocation_url',
  'api_base_url',
  'login_url',
  'insecure_allow_http',
];

/** Loads and validates a frontend config file; throws one ConfigError listing every problem. */
export function loadFrontendConfig(path: string): FrontendConfig {
  return parseFrontendConfig(loadYamlFile(path), path);
}

export function parseFrontendConfig(doc: unknown, source = 'config'): FrontendConfig {
  const r = new ConfigReader();
  const top = r.object(doc, '(document)');
  let oauth: OAuthConfig | undefined;
  let shares: ShareRoute[] = [];
  let metricsAddress: { host: string; port: number } | undefined;
  if (top) {
    r.unknownKeys(top, '', TOP_KEYS);
    oauth = readOAuth(r, top.oauth);
    if (top.metrics_address !== undefined) metricsAddress = r.bindAddress(top, 'metrics_address', '');
    shares = readShares(r, top.shares, oauth);
  }
  r.finish(source);
  return { oauth: oauth as OAuthConfig, shares, ...(metricsAddress ? { metricsAddress } : {}) };
}

/** Validates the `oauth` section; exported for the single-machine service, which embeds it. */
export function readOAuth(r: ConfigReader, value: unknown, path = 'oauth'): OAuthConfig | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  r.unknownKeys(o, path, OAUTH_KEYS);
  const bindAddress = r.bindAddress(o, 'bind_address', path);
  const endpointUrl = r.url(o, 'endpoint_url', path);
  if (endpointUrl && (endpointUrl.pathname !== '/' || endpointUrl.search || endpointUrl.hash || endpointUrl.username)) {
    r.problem(join(path, 'endpoint_url'), 'must be a base URL without path, query, fragment or credentials');
  }
  const cookieName = r.string(o, 'cookie_name', path);
  if (cookieName !== undefined && !COOKIE_NAME.test(cookieName)) {
    r.problem(join(path, 'cookie_name'), "must be a valid cookie name (letters, digits, and !#$%&'*+-.^_`|~)");
  }
  const cookieDomain = r.string(o, 'cookie_domain', path)?.toLowerCase();
  if (cookieDomain !== undefined && !DOMAIN.test(cookieDomain)) {
    r.problem(
      join(path, 'cookie_domain'),
      `must be a DNS domain such as example.com, got ${JSON.stringify(cookieDomain)}`,
    );
  }
  const bareDomain = cookieDomain?.replace(/^\./, '');
  if (endpointUrl && bareDomain && !hostWithin(endpointUrl.hostname, bareDomain)) {
    r.problem(
      join(path, 'cookie_domain'),
      `must contain the endpoint_url host ${endpointUrl.hostname}, so the session cookie reaches the callback and logout`,
    );
  }
  const sessionLifetimeMs = r.duration(o, 'session_lifetime', path);
  const intermediateLifetimeMs = r.duration(o, 'intermediate_lifetime', path);
  const signingKey = r.string(o, 'signing_key', path, { minLength: 32 });
  const encryptionKey = r.string(o, 'encryption_key', path, { minLength: 24 });
  if (signingKey !== undefined && signingKey === encryptionKey) {
    r.problem(join(path, 'encryption_key'), 'must differ from signing_key');
  }
  const providers = readProviders(r, o.providers, join(path, 'providers'));
  if (
    !bindAddress ||
    !endpointUrl ||
    !cookieName ||
    !bareDomain ||
    !sessionLifetimeMs ||
    !intermediateLifetimeMs ||
    !signingKey ||
    !encryptionKey ||
    !providers
  ) {
    return undefined;
  }
  return {
    bindAddress,
    endpointUrl,
    cookieName,
    cookieDomain: bareDomain,
    sessionLifetimeMs,
    intermediateLifetimeMs,
    signingKey,
    encryptionKey,
    providers,
  };
}

function readProviders(r: ConfigReader, value: unknown, path: string): ProviderConfig[] | undefined {
  if (value === undefined || value === null) {
    r.problem(path, 'required: at least one provider');
    return undefined;
  }
  if (!Array.isArray(value) || value.length === 0) {
    r.problem(path, 'must be a non-empty list of providers');
    return undefined;
  }
  const seen = new Set<string>();
  const result: ProviderConfig[] = [];
  value.forEach((item, index) => {
    const at = join(path, index);
    const p = readProvider(r, item, at);
    if (!p) return;
    if (seen.has(p.name)) r.problem(join(at, 'name'), `duplicate provider name ${JSON.stringify(p.name)}`);
    seen.add(p.name);
    result.push(p);
  });
  return result.length === value.length ? result : undefined;
}

function readProvider(r: ConfigReader, value: unknown, path: string): ProviderConfig | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  r.unknownKeys(o, path, PROVIDER_KEYS);
  const before = r.problems.length;
  const name = r.string(o, 'name', path);
  if (name !== undefined && !PROVIDER_NAME.test(name)) {
    r.problem(join(path, 'name'), 'must be letters, digits, - or _ (it is part of the callback and logout paths)');
  }
  const typeText = r.string(o, 'type', path);
  const type = PROVIDER_TYPES.find((t) => t === typeText);
  if (typeText !== undefined && !type)
    r.problem(join(path, 'type'), `must be one of idp1, idp2, oidc, got ${JSON.stringify(typeText)}`);
  const clientId = r.string(o, 'client_id', path);
  const clientSecret = r.string(o, 'client_secret', path);
  const isOidc = type === 'oidc';
  const scopes = r.stringArray(o, 'scopes', path, { required: isOidc, nonEmpty: true });
  if (isOidc && scopes && !scopes.includes('openid'))
    r.problem(join(path, 'scopes'), 'must include openid for type oidc');
  const issuer = isOidc ? r.url(o, 'issuer', path) : undefined;
  const supportsPkce = r.boolean(o, 'supports_pkce', path, { required: isOidc });
  if (!isOidc) {
    for (const key of ['issuer', 'supports_pkce'] as const) {
      if (o[key] !== undefined) r.problem(join(path, key), 'only applies to type oidc');
    }
  }
  const insecureAllowHttp = r.boolean(o, 'insecure_allow_http', path, { required: false }) ?? false;
  const loginUrl = isOidc && o.login_url !== undefined ? r.url(o, 'login_url', path) : undefined;
  const endpoints = type && type !== 'oidc' ? readEndpoints(r, o, path, type) : loginUrl ? { login_url: loginUrl } : {};
  if (isOidc) {
    for (const key of ['authorize_url', 'token_url', 'user_info_url', 'revocation_url', 'api_base_url'] as const) {
      if (o[key] !== undefined)
        r.problem(join(path, key), 'not used by type oidc: its endpoints come from issuer discovery');
    }
  }
  const urls = [issuer, ...(Object.values(endpoints) as unknown[])].filter((u): u is URL => u instanceof URL);
  if (!insecureAllowHttp) {
    for (const u of urls) {
      if (u.protocol === 'http:' && !isLoopbackHost(u.hostname)) {
        r.problem(
          path,
          `${u.href} uses plain http on a non-loopback host; set insecure_allow_http: true to accept that`,
        );
      }
    }
  }
  if (r.problems.length > before || !name || !type || !clientId || !clientSecret) return undefined;
  return {
    name,
    type,
    clientId,
    clientSecret,
    scopes: scopes ?? PROVIDER_DEFAULTS[type].scopes,
    ...(issuer ? { issuer } : {}),
    supportsPkce: supportsPkce ?? false,
    endpoints,
    insecureAllowHttp,
  };
}

function readEndpoints(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  type: 'idp1' | 'idp2',
): ProviderEndpoints {
  const defaults = PROVIDER_DEFAULTS[type].endpoints;
  const allowed =
    type === 'idp1'
      ? ['authorize_url', 'token_url', 'user_info_url', 'revocation_url', 'login_url']
      : ['authorize_url', 'token_url', 'api_base_url', 'login_url'];
  const result: Record<string, URL> = {};
  for (const [key, fallback] of Object.entries(defaults)) {
    const override = o[key] === undefined ? undefined : r.url(o, key, path);
    result[key] = override ?? new URL(fallback);
  }
  for (const key of ['authorize_url', 'token_url', 'user_info_url', 'revocation_url', 'api_base_url']) {
    if (o[key] !== undefined && !allowed.includes(key)) r.problem(join(path, key), `not used by type ${type}`);
  }
  return result;
}

function readShares(r: ConfigReader, value: unknown, oauth: OAuthConfig | undefined): ShareRoute[] {
  if (value === undefined || value === null) {
    r.problem('shares', 'required: the list of shares this frontend serves (may be empty: [])');
    return [];
  }
  if (!Array.isArray(value)) {
    r.problem('shares', 'must be a list');
    return [];
  }
  const providerNames = oauth?.providers.map((p) => p.name);
  const seen = new Set<string>();
  const result: ShareRoute[] = [];
  value.forEach((item, index) => {
    const at = join('shares', index);
    const o = r.object(item, at);
    if (!o) return;
    r.unknownKeys(o, at, SHARE_KEYS);
    const share = readShareOptions(r, o, at, providerNames);
    if (!share) return;
    if (seen.has(share.token)) r.problem(join(at, 'token'), `duplicate share token ${JSON.stringify(share.token)}`);
    seen.add(share.token);
    result.push(share);
  });
  return result;
}

function hostWithin(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}
