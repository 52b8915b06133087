import { SvcError } from '../../lib/errors.ts';
import type { ProviderType } from '../../lib/config/providers.ts';

/** Tokens kept in the session, only as far as refresh and revocation need them. */
export interface ProviderTokens {
  readonly accessToken?: string;
  readonly refreshToken?: string;
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

export interface CallbackInput extends AuthorizationRequest {
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
  revoke(tokens: ProviderTokens): Promise<void>;
  /** Where logout without redirect_url sends the visitor. */
  loginPageUrl(): URL;
}

export class ProviderError extends SvcError {
  constructor(provider: string, message: string, cause?: unknown) {
    super('provider_error', `${provider}: ${message}`, { status: 502, cause });
    this.name = 'ProviderError';
  }
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
