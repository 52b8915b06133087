import { join, type ConfigReader } from '../config-reader.ts';
import { isLoopbackHost } from '../loopback.ts';
import { ENDPOINT_KEYS, PROVIDER_DEFAULTS, type EndpointsOf } from './provider-defaults.ts';

export type ProviderType = 'idp1' | 'idp2' | 'oidc';
const PROVIDER_TYPES: readonly ProviderType[] = ['idp1', 'idp2', 'oidc'];

/**
 * How the client authenticates at the token endpoint (RFC 6749 §2.3.1, OpenID Connect Core §9):
 * HTTP Basic with the form-encoded client id and secret, or both in the form body. Some servers do
 * not decode the Basic credentials (a client id with `-` arrives as `%2D`); they need `client_secret_post`.
 */
export type TokenEndpointAuthMethod = 'client_secret_basic' | 'client_secret_post';
const TOKEN_ENDPOINT_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['client_secret_basic', 'client_secret_post'];
/** idp2's provider documents only the form body; the others take Basic, the RFC 6749 default. */
const DEFAULT_TOKEN_ENDPOINT_AUTH_METHOD: Record<ProviderType, TokenEndpointAuthMethod> = {
  idp1: 'client_secret_basic',
  idp2: 'client_secret_post',
  oidc: 'client_secret_basic',
};

interface ProviderCommon {
  readonly name: string;
  readonly clientId: string;
  /** Empty in a share pod's config: what needs it happens at the auth endpoint (lib/config/frontend.ts). */
  readonly clientSecret: string;
  readonly scopes: readonly string[];
  /** Named opt-out: allow a plain-http issuer or endpoint that is not on a loopback host. */
  readonly insecureAllowHttp: boolean;
  readonly tokenEndpointAuthMethod: TokenEndpointAuthMethod;
}

/** idp1: every endpoint it calls, each the real provider's unless overridden. */
export interface Idp1Config extends ProviderCommon {
  readonly type: 'idp1';
  readonly endpoints: EndpointsOf<'idp1'>;
}

/** idp2: every endpoint it calls, each the real provider's unless overridden. */
export interface Idp2Config extends ProviderCommon {
  readonly type: 'idp2';
  readonly endpoints: EndpointsOf<'idp2'>;
}

/** oidc: its endpoints come from the issuer's discovery document. */
export interface OidcConfig extends ProviderCommon {
  readonly type: 'oidc';
  readonly issuer: URL;
  /** Send a PKCE S256 challenge. */
  readonly supportsPkce: boolean;
  /** Where logout without redirect_url sends the visitor: `login_url`, else the issuer. */
  readonly endpoints: { readonly login_url: URL };
}

/**
 * One configured identity provider, discriminated on `type`: each type carries exactly the settings
 * it needs, all present once the config is valid, so nothing checks for a missing endpoint later.
 */
export type ProviderConfig = Idp1Config | Idp2Config | OidcConfig;

export const PROVIDER_KEYS = [
  'name',
  'type',
  'client_id',
  'client_secret',
  'scopes',
  'issuer',
  'supports_pkce',
  ...ENDPOINT_KEYS,
  'login_url',
  'insecure_allow_http',
  'token_endpoint_auth_method',
];

const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;

/**
 * `oauth.providers`: at least one, names unique. Undefined when any provider has a problem. With
 * `secretless` (a share pod's config) `client_secret` must be absent instead of required.
 */
export function readProviders(
  r: ConfigReader,
  value: unknown,
  path: string,
  options: { secretless?: boolean } = {},
): ProviderConfig[] | undefined {
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
    const p = readProvider(r, item, at, options.secretless ?? false);
    if (!p) return;
    if (seen.has(p.name)) r.problem(join(at, 'name'), `duplicate provider name ${JSON.stringify(p.name)}`);
    seen.add(p.name);
    result.push(p);
  });
  return result.length === value.length ? result : undefined;
}

/** The settings of one type only: `type` and its endpoints (and issuer and PKCE for oidc). */
type TypeSpecific<P = ProviderConfig> = P extends ProviderCommon ? Omit<P, keyof ProviderCommon> : never;

/** A type's settings when complete, and every URL read for them (for the plain-http rule). */
interface TypeSettings {
  readonly settings?: TypeSpecific;
  readonly urls: readonly URL[];
}

function readProvider(r: ConfigReader, value: unknown, path: string, secretless: boolean): ProviderConfig | undefined {
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
  if (secretless && o.client_secret !== undefined)
    r.problem(
      join(path, 'client_secret'),
      "must not be set in a share pod's config (auth_service): the auth endpoint holds it",
      'not_allowed',
    );
  const clientSecret = secretless ? '' : r.string(o, 'client_secret', path);
  const isOidc = type === 'oidc';
  const scopes = r.stringArray(o, 'scopes', path, { required: isOidc, nonEmpty: true });
  if (isOidc && scopes && !scopes.includes('openid'))
    r.problem(join(path, 'scopes'), 'must include openid for type oidc');
  const issuer = isOidc ? r.url(o, 'issuer', path) : undefined;
  const supportsPkce = isOidc ? r.boolean(o, 'supports_pkce', path) : undefined;
  if (!isOidc) {
    for (const key of ['issuer', 'supports_pkce'] as const) {
      if (o[key] !== undefined) r.problem(join(path, key), 'only applies to type oidc');
    }
  }
  const insecureAllowHttp = r.boolean(o, 'insecure_allow_http', path, { required: false }) ?? false;
  const methodText = r.string(o, 'token_endpoint_auth_method', path, { required: false });
  const method = TOKEN_ENDPOINT_AUTH_METHODS.find((m) => m === methodText);
  if (methodText !== undefined && !method) {
    r.problem(
      join(path, 'token_endpoint_auth_method'),
      `must be one of ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}, got ${JSON.stringify(methodText)}`,
      'not_allowed',
    );
  }
  const { settings, urls }: TypeSettings =
    type === 'idp1' || type === 'idp2'
      ? readEndpoints(r, o, path, type)
      : isOidc
        ? readOidcRest(r, o, path, issuer, supportsPkce)
        : { urls: [] };
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
  if (
    r.problems.length > before ||
    !name ||
    !type ||
    !clientId ||
    clientSecret === undefined ||
    (!secretless && !clientSecret) ||
    !settings
  )
    return undefined;
  return {
    name,
    clientId,
    clientSecret,
    scopes: scopes ?? PROVIDER_DEFAULTS[type].scopes,
    insecureAllowHttp,
    tokenEndpointAuthMethod: method ?? DEFAULT_TOKEN_ENDPOINT_AUTH_METHOD[type],
    ...settings,
  };
}

/** The rest of an oidc provider: `login_url` (default: the issuer); endpoint settings are refused. */
function readOidcRest(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  issuer: URL | undefined,
  supportsPkce: boolean | undefined,
): TypeSettings {
  const given = o.login_url === undefined ? undefined : r.url(o, 'login_url', path);
  for (const key of ENDPOINT_KEYS) {
    if (o[key] !== undefined)
      r.problem(join(path, key), 'not used by type oidc: its endpoints come from issuer discovery');
  }
  const urls = [issuer, given].filter((u): u is URL => u !== undefined);
  const loginUrl = given ?? (o.login_url === undefined && issuer ? new URL(issuer.href) : undefined);
  if (!issuer || supportsPkce === undefined || !loginUrl) return { urls };
  return { settings: { type: 'oidc', issuer, supportsPkce, endpoints: { login_url: loginUrl } }, urls };
}

/** The endpoints of an idp1/idp2 provider: each default, or its override; keys of the other type refused. */
function readEndpoints(r: ConfigReader, o: Record<string, unknown>, path: string, type: 'idp1' | 'idp2'): TypeSettings {
  const defaults: Record<string, string> = PROVIDER_DEFAULTS[type].endpoints;
  const endpoints: Record<string, URL> = {};
  for (const [key, fallback] of Object.entries(defaults)) {
    const url = o[key] === undefined ? new URL(fallback) : r.url(o, key, path);
    if (url) endpoints[key] = url;
  }
  for (const key of ENDPOINT_KEYS) {
    if (o[key] !== undefined && !(key in defaults)) r.problem(join(path, key), `not used by type ${type}`);
  }
  const urls = Object.values(endpoints);
  if (urls.length < Object.keys(defaults).length) return { urls };
  return type === 'idp1'
    ? { settings: { type, endpoints: endpoints as EndpointsOf<'idp1'> }, urls }
    : { settings: { type, endpoints: endpoints as EndpointsOf<'idp2'> }, urls };
}
