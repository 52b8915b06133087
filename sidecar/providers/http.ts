import { callbackError, ProviderError, type CallbackInput } from './types.ts';
import { errorText } from '../../lib/errors.ts';
import type { TokenEndpointAuthMethod } from '../../lib/config/providers.ts';

const TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 1 << 20;

/**
 * One HTTP exchange with a provider: bounded in time and size, failures translated into
 * ProviderError (the message never includes request bodies, which carry secrets).
 */
export async function providerRequest(
  provider: string,
  what: string,
  url: URL,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; json: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new ProviderError(provider, `${what} failed: ${errorText(err)}`, err);
  }
  const text = await readLimited(response, provider, what);
  let json: unknown;
  if (text.length > 0) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: response.status, json };
}

async function readLimited(response: Response, provider: string, what: string): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES)
      throw new ProviderError(provider, `${what}: response larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
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

/**
 * RFC 6749 §4.1.3 code exchange with a PKCE verifier; returns the access token. The client
 * authenticates as configured (§2.3.1): HTTP Basic with the form-encoded id and secret, or both in
 * the form body. Some providers answer errors with HTTP 200 and an `error` field, so success is
 * judged by the presence of `access_token`.
 */
export async function exchangeCode(
  provider: string,
  tokenUrl: URL,
  client: { readonly id: string; readonly secret: string; readonly method: TokenEndpointAuthMethod },
  fields: Record<string, string>,
): Promise<string> {
  const basic = client.method === 'client_secret_basic';
  const token = await providerRequest(provider, 'token exchange', tokenUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      ...(basic ? { authorization: basicCredentials(client.id, client.secret) } : {}),
    },
    body: form(basic ? fields : { ...fields, client_id: client.id, client_secret: client.secret }),
  });
  const accessToken = (token.json as { access_token?: unknown } | undefined)?.access_token;
  if (token.status !== 200 || typeof accessToken !== 'string' || accessToken === '') {
    throw new ProviderError(provider, `token exchange refused (HTTP ${token.status}, ${oauthErrorText(token.json)})`);
  }
  return accessToken;
}

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id) ":" urlencode(secret))`. */
function basicCredentials(id: string, secret: string): string {
  const encode = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}
