import { callbackError, ProviderError, statusFailure, unreachable, type CallbackInput } from './types.ts';
import { errorText } from '../../lib/errors.ts';
import { outboundRequest, type OutboundRequest, type OutboundResponse } from '../../lib/outbound-http.ts';
import type { ProviderConfig, TokenEndpointAuthMethod } from '../../lib/config/providers.ts';

const TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 1 << 20;

/**
 * One HTTP exchange with a provider: bounded in time and size, failures translated into
 * ProviderError (the message never includes request bodies, which carry secrets). An exchange that
 * does not complete (refused, reset, timeout, too large) is `provider_unreachable`.
 */
export async function providerRequest(
  provider: string,
  what: string,
  url: URL,
  init: Pick<OutboundRequest, 'method' | 'headers' | 'body'>,
): Promise<{ status: number; contentType: string; json: unknown }> {
  let response: OutboundResponse;
  try {
    response = await outboundRequest(url, { ...init, timeoutMs: TIMEOUT_MS, maxBodyBytes: MAX_BODY_BYTES });
  } catch (err) {
    throw unreachable(provider, `${what} failed: ${errorText(err)}`, err);
  }
  let json: unknown;
  if (response.body.length > 0) {
    try {
      json = JSON.parse(response.body.toString('utf8'));
    } catch {
      json = undefined;
    }
  }
  return { status: response.status, contentType: response.headers['content-type'] ?? '', json };
}

export function form(values: Record<string, string>): string {
  return new URLSearchParams(values).toString();
}

function oauthErrorText(json: unknown): string {
  if (json && typeof json === 'object' && 'error' in json) {
    const { error, error_description: description } = json as { error: unknown; error_description?: unknown };
    return `${String(error)}${typeof description === 'string' ? `: ${description}` : ''}`;
  }
  return 'unexpected response';
}

/** The authorization code of a callback, after translating an `error` the provider put there. */
export function callbackCode(provider: string, input: CallbackInput): string {
  const refused = callbackError(provider, input.callbackUrl);
  if (refused) throw refused;
  const code = input.callbackUrl.searchParams.get('code');
  if (!code) throw new ProviderError(provider, 'the login response has no authorization code');
  return code;
}

/** How svc authenticates to a provider's token, revocation (and other client) endpoints. */
export interface ClientCredentials {
  readonly id: string;
  readonly secret: string;
  readonly method: TokenEndpointAuthMethod;
}

/** A provider config's client credentials, as its client endpoints take them. */
export function clientCredentials(config: ProviderConfig): ClientCredentials {
  return { id: config.clientId, secret: config.clientSecret, method: config.tokenEndpointAuthMethod };
}

/**
 * A form POST to one of the provider's client endpoints (token, revocation), the client
 * authenticated as configured (RFC 6749 §2.3.1): HTTP Basic with the form-encoded id and secret, or
 * both in the form body.
 */
export function clientRequest(
  provider: string,
  what: string,
  url: URL,
  client: ClientCredentials,
  fields: Record<string, string>,
): Promise<{ status: number; contentType: string; json: unknown }> {
  const basic = client.method === 'client_secret_basic';
  return providerRequest(provider, what, url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      ...(basic ? { authorization: basicCredentials(client.id, client.secret) } : {}),
    },
    body: form(basic ? fields : { ...fields, client_id: client.id, client_secret: client.secret }),
  });
}

/**
 * The ProviderError for an endpoint's refusal, with the OAuth `error` (and description) it gave; a
 * 5xx is the provider failing on its side (`provider_unreachable`).
 */
export function refusal(provider: string, what: string, status: number, json: unknown): ProviderError {
  return statusFailure(provider, `${what} refused (HTTP ${status}, ${oauthErrorText(json)})`, status);
}

/**
 * RFC 6749 §4.1.3 code exchange with a PKCE verifier; returns the access token. Some providers
 * answer errors with HTTP 200 and an `error` field, so success is judged by the presence of
 * `access_token`.
 */
export async function exchangeCode(
  provider: string,
  tokenUrl: URL,
  client: ClientCredentials,
  fields: Record<string, string>,
): Promise<string> {
  const token = await clientRequest(provider, 'token exchange', tokenUrl, client, fields);
  const accessToken = (token.json as { access_token?: unknown } | undefined)?.access_token;
  if (token.status !== 200 || typeof accessToken !== 'string' || accessToken === '') {
    throw refusal(provider, 'token exchange', token.status, token.json);
  }
  return accessToken;
}

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id) ":" urlencode(secret))`. */
function basicCredentials(id: string, secret: string): string {
  const encode = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}
