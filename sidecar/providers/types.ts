import { SvcError } from '../../lib/errors.ts';
import type { ProviderType } from '../../lib/config/providers.ts';

/** Tokens kept in the session, only as far as refresh and revocation need them. */
export interface ProviderTokens {
  readonly accessToken?: string;
  readonly refreshToken?: string;
  /**
   * The subject (`sub`) the login's ID token named (oidc): a refresh that vouches for another
   * subject is refused. Absent for providers without ID tokens and for sessions made without one.
   */
  readonly sub?: string;
}

export interface Identity {
  readonly email: string;
  /** The provider vouches that the visitor controls this address (oidc email_verified, idp2 verified). */
  readonly verified: boolean;
}

export interface LoginResult {
  readonly tokens: ProviderTokens;
  readonly identity: Identity;
}

export interface AuthorizationRequest {
  readonly redirectUri: string;
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
}

/**
 * A callback whose `state` the login-state store (sidecar/login-state.ts) has already matched to a
 * login of this browser: the provider gets that login's secrets, and checks the rest.
 */
export interface CallbackInput extends Omit<AuthorizationRequest, 'state'> {
  /** The full callback URL as the provider redirected to it (endpoint_url based, never the Host header). */
  readonly callbackUrl: URL;
}

/**
 * One configured identity provider. Each type speaks its provider's HTTP contract; the frontend
 * only sees this interface. Every failure is a ProviderError whose message is safe to show.
 */
export interface Provider {
  readonly name: string;
  readonly type: ProviderType;
  /** Resolves when the provider can be used (oidc: discovery done); rejects with a ProviderError. */
  ready(): Promise<void>;
  authorizationUrl(request: AuthorizationRequest): Promise<URL>;
  completeLogin(input: CallbackInput): Promise<LoginResult>;
  /** True when this session can be re-verified without a prompt. */
  canRefresh(tokens: ProviderTokens): boolean;
  refresh(tokens: ProviderTokens): Promise<LoginResult>;
  /**
   * Revokes every token the provider can revoke, each even when another's revocation failed.
   * Rejects with the ProviderError of the one that failed, or an AggregateError of several.
   */
  revoke(tokens: ProviderTokens): Promise<void>;
  /** Where logout without redirect_url sends the visitor. */
  loginPageUrl(): URL;
}

/**
 * What kind of provider failure: the provider refused or answered what svc cannot use
 * (`provider_error`), a token or signed answer failed verification, i.e. forged, mixed up or for
 * another subject (`invalid_token`), or the provider could not be reached or failed on its side
 * (`provider_unreachable`: connection refused, timeout, HTTP 5xx).
 */
export type ProviderFailure = 'provider_error' | 'invalid_token' | 'provider_unreachable';

/** The page status of each failure: a forged token is the visitor's side, an outage the provider's. */
const FAILURE_STATUS: Record<ProviderFailure, number> = {
  provider_error: 502,
  invalid_token: 401,
  provider_unreachable: 502,
};

export class ProviderError extends SvcError {
  declare readonly code: ProviderFailure;

  constructor(provider: string, message: string, cause?: unknown, code: ProviderFailure = 'provider_error') {
    super(code, `${provider}: ${message}`, { status: FAILURE_STATUS[code], cause });
    this.name = 'ProviderError';
  }
}

/** A token or signed answer of the provider that fails verification (forged, mixed up, another subject). */
export function invalidToken(provider: string, message: string, cause?: unknown): ProviderError {
  return new ProviderError(provider, message, cause, 'invalid_token');
}

/** The provider could not be reached, did not answer in time, or failed on its side (HTTP 5xx). */
export function unreachable(provider: string, message: string, cause?: unknown): ProviderError {
  return new ProviderError(provider, message, cause, 'provider_unreachable');
}

/** The failure kind of anything a provider call threw (anything not a ProviderError is `provider_error`). */
export function failureOf(err: unknown): ProviderFailure {
  return err instanceof ProviderError ? err.code : 'provider_error';
}

/** The failure of an HTTP status the provider answered: 5xx is an outage, anything else a refusal. */
export function statusFailure(provider: string, message: string, status: number): ProviderError {
  return status >= 500 ? unreachable(provider, message) : new ProviderError(provider, message);
}

/** The `error` an authorization server put in the callback, translated before any exchange. */
export function callbackError(provider: string, url: URL): ProviderError | undefined {
  const error = url.searchParams.get('error');
  if (!error) return undefined;
  const description = url.searchParams.get('error_description');
  return new ProviderError(
    provider,
    `the provider refused the login (${error}${description ? `: ${description}` : ''})`,
  );
}
