import type { OidcConfig } from '../../lib/config/providers.ts';
import { providerRequest } from './http.ts';
import { ProviderError, statusFailure } from './types.ts';

/** What svc uses of an OpenID Provider's metadata (OpenID Connect Discovery 1.0 §3), validated. */
export interface IssuerMetadata {
  /** Exactly as the provider wrote it: ID tokens' `iss` must equal this string. */
  readonly issuer: string;
  readonly authorizationEndpoint: URL;
  readonly tokenEndpoint: URL;
  readonly jwksUri: URL;
  readonly userinfoEndpoint: URL | undefined;
  readonly revocationEndpoint: URL | undefined;
  /** ID token signature algorithms svc accepts from this provider (asymmetric ones only). */
  readonly idTokenAlgorithms: readonly string[];
  /** RFC 9207: the provider puts `iss` in every authorization response, so a missing one is refused. */
  readonly issParameterSupported: boolean;
}

/**
 * The asymmetric JWS algorithms svc verifies ID tokens with. `none` and the HMAC ones (keyed with
 * the client secret) are never accepted, whatever the provider advertises.
 */
const ASYMMETRIC_ALGORITHMS = new Set([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);

/**
 * Fetches and checks `<issuer>/.well-known/openid-configuration`: an object whose `issuer` is the
 * configured one (§4.3: no other provider may answer for it), with absolute endpoint URLs that use
 * https unless http is allowed. Throws ProviderError naming the first problem.
 */
export async function discoverIssuer(config: OidcConfig): Promise<IssuerMetadata> {
  const { name, issuer } = config;
  const what = `discovery at ${issuer.href}`;
  const url = new URL(issuer);
  url.pathname = `${url.pathname}/.well-known/openid-configuration`.replace('//', '/');
  const response = await providerRequest(name, what, url, { method: 'GET', headers: { accept: 'application/json' } });
  const doc = response.json;
  if (response.status !== 200) throw statusFailure(name, `${what} failed: HTTP ${response.status}`, response.status);
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw new ProviderError(name, `${what} failed: the response is not a JSON object`);
  const meta = doc as Record<string, unknown>;
  const problem = (text: string) => new ProviderError(name, `${what} failed: ${text}`);

  if (typeof meta.issuer !== 'string' || urlOrUndefined(meta.issuer)?.href !== issuer.href)
    throw problem(`the document names issuer ${JSON.stringify(meta.issuer)}, not ${JSON.stringify(issuer.href)}`);
  // An http issuer passed config validation only on a loopback host or with insecure_allow_http
  // (lib/config/providers.ts); its endpoints may then be http too, as its discovery document is.
  const httpAllowed = issuer.protocol === 'http:';
  const endpoint = (field: string, required: boolean): URL | undefined => {
    const value = meta[field];
    if (value === undefined && !required) return undefined;
    const parsed = typeof value === 'string' ? urlOrUndefined(value) : undefined;
    if (!parsed) throw problem(`${field} is ${value === undefined ? 'missing' : 'not an absolute URL'}`);
    if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && httpAllowed))
      throw problem(
        `${field} ${parsed.href} is not https (only a loopback or insecure_allow_http issuer may use http)`,
      );
    return parsed;
  };
  const advertised = meta.id_token_signing_alg_values_supported;
  const algorithms = Array.isArray(advertised)
    ? advertised.filter((alg): alg is string => typeof alg === 'string' && ASYMMETRIC_ALGORITHMS.has(alg))
    : ['RS256'];
  if (algorithms.length === 0)
    throw problem(`no supported ID token signature algorithm among ${JSON.stringify(advertised)}`);

  return {
    issuer: meta.issuer,
    authorizationEndpoint: endpoint('authorization_endpoint', true)!,
    tokenEndpoint: endpoint('token_endpoint', true)!,
    jwksUri: endpoint('jwks_uri', true)!,
    userinfoEndpoint: endpoint('userinfo_endpoint', false),
    revocationEndpoint: endpoint('revocation_endpoint', false),
    idTokenAlgorithms: algorithms,
    issParameterSupported: meta.authorization_response_iss_parameter_supported === true,
  };
}

function urlOrUndefined(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
