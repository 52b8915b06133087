import { errorText } from '../../lib/errors.ts';
import type { OidcConfig } from '../../lib/config/providers.ts';
import { clientRequest, providerRequest, refusal, type ClientCredentials } from './http.ts';
import type { IdTokenClaims, IdTokenVerifier } from './id-token.ts';
import type { IssuerMetadata } from './oidc-discovery.ts';
import { invalidToken, ProviderError, unreachable, type Identity, type ProviderTokens } from './types.ts';

/** What discovery gives an OpenID client: the issuer's metadata and the verifier of its ID tokens. */
export interface Discovered {
  readonly metadata: IssuerMetadata;
  readonly idTokens: IdTokenVerifier;
}

/** What every exchange of one OpenID provider needs: its name, config, client credentials and discovery. */
export interface OidcClient {
  readonly name: string;
  readonly config: OidcConfig;
  readonly client: ClientCredentials;
  /** The issuer's metadata, discovered once (a failed discovery is retried by the next call). */
  discovery(): Promise<Discovered>;
}

/** A successful token endpoint response (RFC 6749 §5.1), with the ID token's verified claims. */
export interface Tokens {
  readonly accessToken: string;
  readonly refreshToken?: string;
  readonly claims?: IdTokenClaims;
}

/** RFC 6749 §5.1/§5.2 at the token endpoint; an OpenID login must bring an ID token. */
export async function tokenGrant(
  oidc: OidcClient,
  what: string,
  fields: Record<string, string>,
  idToken: { required: boolean; nonce?: string },
): Promise<Tokens> {
  const { name } = oidc;
  const { metadata, idTokens } = await oidc.discovery();
  const response = await clientRequest(name, what, metadata.tokenEndpoint, oidc.client, fields);
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (response.status !== 200 || typeof body.access_token !== 'string' || body.access_token === '')
    throw refusal(name, what, response.status, response.json);
  if (typeof body.token_type !== 'string' || body.token_type.toLowerCase() !== 'bearer')
    throw new ProviderError(name, `${what}: unsupported token_type ${JSON.stringify(body.token_type)}`);
  if (body.refresh_token !== undefined && typeof body.refresh_token !== 'string')
    throw new ProviderError(name, `${what}: refresh_token is not a string`);
  if (body.id_token !== undefined && typeof body.id_token !== 'string')
    throw new ProviderError(name, `${what}: id_token is not a string`);
  if (idToken.required && body.id_token === undefined) throw new ProviderError(name, `${what}: no ID token`);
  const claims = body.id_token === undefined ? undefined : await idTokens.verify(body.id_token, idToken.nonce);
  return {
    accessToken: body.access_token,
    ...(body.refresh_token ? { refreshToken: body.refresh_token } : {}),
    ...(claims ? { claims } : {}),
  };
}

/** OpenID Connect Core §5.3: user info as JSON, for the same subject as the ID token. */
async function userInfo(
  oidc: OidcClient,
  accessToken: string,
  subject: string | undefined,
): Promise<Record<string, unknown>> {
  const { name } = oidc;
  const { metadata } = await oidc.discovery();
  if (!metadata.userinfoEndpoint)
    throw new ProviderError(name, 'the ID token has no email and the provider has no user info endpoint');
  const response = await providerRequest(name, 'user info', metadata.userinfoEndpoint, {
    method: 'GET',
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
  });
  const info = response.json as Record<string, unknown> | undefined;
  if (response.status !== 200) throw refusal(name, 'user info', response.status, response.json);
  if (!info || typeof info !== 'object' || !/^application\/json/i.test(response.contentType))
    throw new ProviderError(name, 'user info: the response is not a JSON object (signed user info is not supported)');
  if (subject !== undefined && info.sub !== subject)
    throw invalidToken(name, 'user info: "sub" is not the subject of the ID token');
  return info;
}

/** The identity the tokens vouch for; user info, when needed, must be about `subject`. */
export async function identityOf(oidc: OidcClient, tokens: Tokens, subject: string | undefined): Promise<Identity> {
  let email = tokens.claims?.email;
  let verified = tokens.claims?.email_verified;
  if (typeof email !== 'string' || typeof verified !== 'boolean') {
    const info = await userInfo(oidc, tokens.accessToken, subject);
    email = info.email;
    verified = info.email_verified;
  }
  if (typeof email !== 'string')
    throw new ProviderError(oidc.name, 'the provider returned no email address (is the email scope granted?)');
  return { email, verified: verified === true };
}

/** What the session keeps of `tokens`: a refresh keeps the login's refresh token and subject unless it brings new ones. */
export function sessionTokens(tokens: Tokens, previous?: ProviderTokens): ProviderTokens {
  const refreshToken = tokens.refreshToken ?? previous?.refreshToken;
  const sub = tokens.claims?.sub ?? previous?.sub;
  return { accessToken: tokens.accessToken, ...(refreshToken ? { refreshToken } : {}), ...(sub ? { sub } : {}) };
}

/**
 * RFC 7009 revocation of the refresh and the access token, when the issuer has the endpoint. Each
 * token is revoked even when the other's revocation failed; the failures are reported together, by
 * token type only (never the token).
 */
export async function revokeTokens(oidc: OidcClient, tokens: ProviderTokens): Promise<void> {
  const { metadata } = await oidc.discovery();
  const endpoint = metadata.revocationEndpoint;
  if (!endpoint) return;
  const hints: [string | undefined, string][] = [
    [tokens.refreshToken, 'refresh_token'],
    [tokens.accessToken, 'access_token'],
  ];
  const failures: ProviderError[] = [];
  for (const [token, hint] of hints) {
    if (!token) continue;
    const failure = await revocationFailure(oidc, endpoint, token, hint);
    if (failure) failures.push(failure);
  }
  if (failures.length > 1) throw new AggregateError(failures, `${oidc.name}: revocation failed for both tokens`);
  const [failure] = failures;
  if (failure) throw failure;
}

/** Revokes one token; the ProviderError when that failed, undefined when it was revoked. */
async function revocationFailure(
  oidc: OidcClient,
  endpoint: URL,
  token: string,
  hint: string,
): Promise<ProviderError | undefined> {
  const { name } = oidc;
  const what = `revocation of the ${hint.replace('_', ' ')}`;
  try {
    const result = await clientRequest(name, what, endpoint, oidc.client, { token, token_type_hint: hint });
    return result.status === 200 ? undefined : refusal(name, what, result.status, result.json);
  } catch (err) {
    return err instanceof ProviderError ? err : unreachable(name, `${what} failed: ${errorText(err)}`, err);
  }
}
