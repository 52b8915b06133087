import { createHash } from 'node:crypto';
import type { Idp1Config, Idp2Config } from '../../lib/config/providers.ts';
import { callbackCode, clientCredentials, exchangeCode, form } from './http.ts';
import type { AuthorizationRequest, CallbackInput } from './types.ts';

/** RFC 7636 S256 code challenge of a verifier. */
function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

/**
 * The authorization URL of an RFC 6749 §4.1 code flow with PKCE (RFC 7636, S256), as idp1 and
 * idp2 take it: the client, redirect, scopes, state and challenge, plus the provider's own
 * parameters (`extra`).
 */
export function pkceAuthorizationUrl(
  config: Idp1Config | Idp2Config,
  request: AuthorizationRequest,
  extra: Record<string, string>,
): URL {
  const url = new URL(config.endpoints.authorize_url);
  url.search = form({
    client_id: config.clientId,
    redirect_uri: request.redirectUri,
    scope: config.scopes.join(' '),
    state: request.state,
    code_challenge: pkceChallenge(request.codeVerifier),
    code_challenge_method: 'S256',
    ...extra,
  });
  return url;
}

/** Exchanges the callback's code with the client credentials and the PKCE verifier; returns the access token. */
export function exchangePkceCode(
  config: Idp1Config | Idp2Config,
  input: CallbackInput,
  extra: Record<string, string> = {},
): Promise<string> {
  return exchangeCode(config.name, config.endpoints.token_url, clientCredentials(config), {
    ...extra,
    code: callbackCode(config.name, input),
    redirect_uri: input.redirectUri,
    code_verifier: input.codeVerifier,
  });
}
