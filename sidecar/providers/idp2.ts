import type { Idp2Config } from '../../lib/config/providers.ts';
import { ProviderError, statusFailure, type CallbackInput, type Provider, type ProviderTokens } from './types.ts';
import { providerRequest } from './http.ts';
import { exchangePkceCode, pkceAuthorizationUrl } from './pkce-code-flow.ts';

interface EmailEntry {
  email?: unknown;
  primary?: unknown;
  verified?: unknown;
}

/**
 * idp2: the code-hosting platform's OAuth apps. The email comes from `GET {api}/user/emails`
 * (the primary address, which must be `verified`); logout deletes the application token with
 * `DELETE {api}/applications/{client_id}/token` under HTTP basic auth. No refresh tokens.
 */
export function idp2Provider(config: Idp2Config): Provider {
  const { name, endpoints } = config;
  const base = new URL(endpoints.api_base_url.href.replace(/\/?$/, '/'));
  const api = (path: string): URL => new URL(path.replace(/^\//, ''), base);
  return {
    name,
    type: 'idp2',
    ready: () => Promise.resolve(),
    authorizationUrl(request) {
      return Promise.resolve(pkceAuthorizationUrl(config, request, { allow_signup: 'false' }));
    },
    async completeLogin(input: CallbackInput) {
      const accessToken = await exchangePkceCode(config, input);
      const emails = await providerRequest(name, 'email lookup', api('/user/emails'), {
        method: 'GET',
        headers: {
          authorization: `Bearer ${accessToken}`,
          accept: 'application/vnd.github+json',
          'user-agent': 'svc-frontend',
        },
      });
      if (emails.status !== 200 || !Array.isArray(emails.json)) {
        throw statusFailure(name, `email lookup failed (HTTP ${emails.status})`, emails.status);
      }
      const primary = (emails.json as EmailEntry[]).find((e) => e.primary === true);
      if (!primary || typeof primary.email !== 'string')
        throw new ProviderError(name, 'the account has no primary email address');
      return { tokens: { accessToken }, identity: { email: primary.email, verified: primary.verified === true } };
    },
    canRefresh: () => false,
    refresh: () => Promise.reject(new ProviderError(name, 'refresh is not supported')),
    async revoke(tokens: ProviderTokens) {
      if (!tokens.accessToken) return;
      const basic = Buffer.from(`${config.clientId}:${config.clientSecret}`).toString('base64');
      const result = await providerRequest(
        name,
        'token deletion',
        api(`/applications/${encodeURIComponent(config.clientId)}/token`),
        {
          method: 'DELETE',
          headers: {
            authorization: `Basic ${basic}`,
            accept: 'application/vnd.github+json',
            'content-type': 'application/json',
            'user-agent': 'svc-frontend',
          },
          body: JSON.stringify({ access_token: tokens.accessToken }),
        },
      );
      if (result.status !== 204)
        throw statusFailure(name, `token deletion refused (HTTP ${result.status})`, result.status);
    },
    loginPageUrl: () => endpoints.login_url,
  };
}
