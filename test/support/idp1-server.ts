import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the idp1 (web-search company) OAuth 2.0 web-server contract, as its public
 * docs describe it: `GET /o/oauth2/v2/auth`, `POST /token` (client credentials as HTTP Basic or in the form body),
 * `GET /v1/userinfo` and `POST /revoke` (RFC 7009 style, `token=` in a form). The "user" who signs
 * in is whatever the test puts in `nextUser`; the consent screen is skipped and the browser is sent
 * straight back. Everything the frontend sends is recorded so tests can assert on it.
 */
export interface Idp1User {
  email: string;
  /** Absent: the provider says nothing about verification (which never counts as verified). */
  email_verified?: boolean;
}

/** One authorization code as issued: bound to client, redirect_uri and PKCE challenge, usable once. */
interface IssuedCode {
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scope: string;
  readonly challenge: string;
  readonly nonce: string | undefined;
  readonly user: Idp1User;
  readonly expiresAt: number;
  used: boolean;
}

interface IssuedToken {
  readonly user: Idp1User;
  readonly sub: string;
  readonly scope: string;
  revoked: boolean;
}

export interface RecordedTokenRequest {
  readonly code: string | undefined;
  readonly redirectUri: string | undefined;
  readonly codeVerifier: string | undefined;
  readonly clientId: string | undefined;
  /** How the client authenticated: an Authorization: Basic header, or credentials in the form. */
  readonly authMethod: 'client_secret_basic' | 'client_secret_post';
  /** The error answered, or undefined when a token was issued. */
  readonly error: string | undefined;
}

export class Idp1Server {
  readonly clientId = 'idp1-client.apps.example';
  readonly clientSecret = `idp1-secret-${randomBytes(12).toString('hex')}`;
  /** Callback URLs registered for the client (exact match, as the provider requires). */
  redirectUris: string[] = [];
  /** Who signs in at the next authorization request. */
  nextUser: Idp1User = { email: 'alice@example.com', email_verified: true };
  /** When set, the next authorization requests are answered with this error instead of a code. */
  denyWith: { error: string; error_description?: string } | undefined;
  /** When set, `POST /token` answers with this status and JSON body (simulated outage or refusal). */
  tokenFailure: { status: number; body: unknown } | undefined;
  /**
   * How clients may authenticate at `POST /token` (the real provider takes both). Tests narrow it to
   * one to check that the frontend sends the configured token_endpoint_auth_method.
   */
  tokenAuthMethods: ('client_secret_basic' | 'client_secret_post')[] = ['client_secret_basic', 'client_secret_post'];
  /** When set, `POST /revoke` answers with this status (simulated outage). */
  revokeStatus: number | undefined;
  /** Parameters of every authorization request received. */
  readonly authorizeRequests: URLSearchParams[] = [];
  readonly tokenRequests: RecordedTokenRequest[] = [];
  /** Every access token issued, in order. */
  readonly issuedTokens: string[] = [];
  /** The `token` value of every revocation request received, in order (also the refused ones). */
  readonly revocationRequests: string[] = [];
  readonly userInfoRequests: string[] = [];

  private readonly codes = new Map<string, IssuedCode>();
  private readonly tokens = new Map<string, IssuedToken>();
  private server: Server | undefined;
  private base: URL | undefined;

  /** The provider's base URL (`http://127.0.0.1:<port>`). */
  get url(): URL {
    if (!this.base) throw new Error('idp1 server not started');
    return this.base;
  }

  /** The provider entry for a frontend config file, every endpoint pointed at this server. */
  providerConfig(name = 'idp1'): Record<string, unknown> {
    const at = (path: string): string => new URL(path, this.url).href;
    return {
      name,
      type: 'idp1',
      client_id: this.clientId,
      client_secret: this.clientSecret,
      scopes: ['openid', 'email'],
      authorize_url: at('/o/oauth2/v2/auth'),
      token_url: at('/token'),
      user_info_url: at('/v1/userinfo'),
      revocation_url: at('/revoke'),
      login_url: at('/ServiceLogin'),
    };
  }

  get loginUrl(): string {
    return new URL('/ServiceLogin', this.url).href;
  }

  /** Whether an access token is known and not revoked. */
  isActive(token: string): boolean {
    const t = this.tokens.get(token);
    return t !== undefined && !t.revoked;
  }

  /**
   * What the visitor's browser does at the provider: opens the authorization URL, "signs in" as
   * `nextUser`, and follows nothing further. Returns where the provider redirected to.
   */
  async authorize(authorizationUrl: string | URL): Promise<URL> {
    const response = await fetch(authorizationUrl, { redirect: 'manual' });
    const location = response.headers.get('location');
    if (response.status !== 302 || !location) {
      throw new Error(`idp1 authorize answered ${response.status}: ${await response.text()}`);
    }
    return new URL(location);
  }

  /** Starts listening; after `close()`, starts again on the same port (a provider back from an outage). */
  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) =>
        sendJson(res, 500, { error: 'server_error', error_description: String(err) }),
      );
    });
    const port = await listenOnLoopback(this.server, this.base ? Number(this.base.port) : 0);
    this.base = new URL(`http://127.0.0.1:${port}`);
    return this;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const route = `${req.method} ${url.pathname}`;
    if (route === 'GET /o/oauth2/v2/auth') return this.authorizeEndpoint(url.searchParams, res);
    if (route === 'POST /token') return this.tokenEndpoint(await readForm(req), req, res);
    if (route === 'GET /v1/userinfo') return this.userInfoEndpoint(req, res, 'openid');
    if (route === 'GET /oauth2/v2/userinfo') return this.userInfoEndpoint(req, res, 'v2');
    if (route === 'POST /revoke') return this.revokeEndpoint(await readForm(req), url.searchParams, res);
    if (route === 'GET /ServiceLogin') return sendHtml(res, 200, 'Sign in');
    sendJson(res, 404, { error: 'not_found' });
  }

  private authorizeEndpoint(params: URLSearchParams, res: ServerResponse): void {
    this.authorizeRequests.push(params);
    // Errors about the client or the redirect URI are shown to the user, never sent to the redirect URI.
    if (params.get('client_id') !== this.clientId) return sendHtml(res, 401, 'Error 401: invalid_client');
    const redirectUri = params.get('redirect_uri') ?? '';
    if (!this.redirectUris.includes(redirectUri)) return sendHtml(res, 400, 'Error 400: redirect_uri_mismatch');
    const back = (values: Record<string, string>): void => {
      const target = new URL(redirectUri);
      const state = params.get('state');
      for (const [k, v] of Object.entries({ ...values, ...(state !== null ? { state } : {}) }))
        target.searchParams.set(k, v);
      res.writeHead(302, { location: target.href });
      res.end();
    };
    if (params.get('response_type') !== 'code')
      return back({ error: 'unsupported_response_type', error_description: 'response_type must be code' });
    const scope = params.get('scope') ?? '';
    if (!scope.split(' ').includes('email'))
      return back({ error: 'invalid_scope', error_description: 'the email scope is required here' });
    const challenge = params.get('code_challenge');
    if (!challenge || params.get('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge))
      return back({ error: 'invalid_request', error_description: 'PKCE S256 code_challenge required' });
    if (this.denyWith) return back(this.denyWith);
    const code = `4/${randomBytes(24).toString('base64url')}`;
    this.codes.set(code, {
      clientId: this.clientId,
      redirectUri,
      scope,
      challenge,
      nonce: params.get('nonce') ?? undefined,
      user: { ...this.nextUser },
      expiresAt: Date.now() + 60_000,
      used: false,
    });
    back({ code, scope });
  }

  private tokenEndpoint(form: URLSearchParams, req: IncomingMessage, res: ServerResponse): void {
    const record = (error: string | undefined): void => {
      this.tokenRequests.push({
        code: form.get('code') ?? undefined,
        redirectUri: form.get('redirect_uri') ?? undefined,
        codeVerifier: form.get('code_verifier') ?? undefined,
        clientId: form.get('client_id') ?? undefined,
        authMethod: /^Basic /i.test(req.headers.authorization ?? '') ? 'client_secret_basic' : 'client_secret_post',
        error,
      });
    };
    const fail = (status: number, error: string, description: string): void => {
      record(error);
      sendJson(res, status, { error, error_description: description });
    };
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
      return fail(400, 'invalid_request', 'form body expected');
    if (this.tokenFailure) {
      record('forced');
      return sendJson(res, this.tokenFailure.status, this.tokenFailure.body);
    }
    const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const decode = (v: string) => decodeURIComponent(v.replace(/\+/g, ' '));
    const [basicId, basicSecret] = basic
      ? Buffer.from(basic[1] ?? '', 'base64')
          .toString('utf8')
          .split(':')
          .map(decode)
      : [];
    const viaBasic = basic !== null && this.tokenAuthMethods.includes('client_secret_basic');
    const viaPost = !basic && form.has('client_secret') && this.tokenAuthMethods.includes('client_secret_post');
    const clientId = viaBasic ? basicId : form.get('client_id');
    const clientSecret = viaBasic ? basicSecret : form.get('client_secret');
    if ((!viaBasic && !viaPost) || clientId !== this.clientId || clientSecret !== this.clientSecret)
      return fail(401, 'invalid_client', 'Unauthorized');
    if (form.get('grant_type') !== 'authorization_code')
      return fail(400, 'unsupported_grant_type', 'Invalid grant_type: ' + (form.get('grant_type') ?? ''));
    const code = this.codes.get(form.get('code') ?? '');
    if (!code || code.used || code.expiresAt < Date.now() || code.clientId !== clientId)
      return fail(400, 'invalid_grant', 'Bad Request');
    code.used = true;
    if (form.get('redirect_uri') !== code.redirectUri) return fail(400, 'redirect_uri_mismatch', 'Bad Request');
    const verifier = form.get('code_verifier');
    if (!verifier) return fail(400, 'invalid_grant', 'Missing code verifier.');
    if (s256(verifier) !== code.challenge) return fail(400, 'invalid_grant', 'Invalid code verifier.');
    const accessToken = `ya29.${randomBytes(32).toString('base64url')}`;
    const sub = createHash('sha256').update(code.user.email.toLowerCase()).digest('hex').slice(0, 21);
    this.tokens.set(accessToken, { user: code.user, sub, scope: code.scope, revoked: false });
    this.issuedTokens.push(accessToken);
    record(undefined);
    sendJson(res, 200, {
      access_token: accessToken,
      expires_in: 3599,
      token_type: 'Bearer',
      scope: code.scope,
      ...(code.scope.split(' ').includes('openid') ? { id_token: this.idToken(sub, code) } : {}),
    });
  }

  /** The OpenID user info (`email_verified`), or the older OAuth2 v2 one (`id`, `verified_email`). */
  private userInfoEndpoint(req: IncomingMessage, res: ServerResponse, flavour: 'openid' | 'v2'): void {
    const token = bearer(req);
    this.userInfoRequests.push(token ?? '');
    const issued = token === undefined ? undefined : this.tokens.get(token);
    if (!issued || issued.revoked) {
      res.setHeader('www-authenticate', 'Bearer realm="https://accounts.example", error="invalid_token"');
      return sendJson(res, 401, { error: 'invalid_request', error_description: 'Invalid Credentials' });
    }
    if (flavour === 'v2') {
      return sendJson(res, 200, {
        id: issued.sub,
        email: issued.user.email,
        verified_email: issued.user.email_verified,
      });
    }
    sendJson(res, 200, { sub: issued.sub, email: issued.user.email, email_verified: issued.user.email_verified });
  }

  private revokeEndpoint(form: URLSearchParams, query: URLSearchParams, res: ServerResponse): void {
    const token = form.get('token') ?? query.get('token') ?? '';
    this.revocationRequests.push(token);
    if (this.revokeStatus !== undefined) return sendJson(res, this.revokeStatus, { error: 'backend_error' });
    const issued = this.tokens.get(token);
    if (!issued || issued.revoked) {
      return sendJson(res, 400, { error: 'invalid_token', error_description: 'Token expired or revoked' });
    }
    issued.revoked = true;
    sendJson(res, 200, {});
  }

  /** A compact JWT shaped like the provider's (HS256 under the client secret: nobody here verifies it). */
  private idToken(sub: string, code: IssuedCode): string {
    const now = Math.floor(Date.now() / 1000);
    const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
    const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({
      iss: this.url.origin,
      aud: this.clientId,
      sub,
      email: code.user.email,
      email_verified: code.user.email_verified,
      iat: now,
      exp: now + 3600,
      ...(code.nonce ? { nonce: code.nonce } : {}),
    })}`;
    return `${body}.${createHmac('sha256', this.clientSecret).update(body).digest('base64url')}`;
  }
}

export async function startIdp1Server(): Promise<Idp1Server> {
  return new Idp1Server().start();
}

/** RFC 7636 S256: base64url(sha256(verifier)). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new URLSearchParams(await readBody(req));
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
}

export function sendHtml(res: ServerResponse, status: number, title: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><title>${title}</title><h1>${title}</h1>`);
}

/** The token of an `Authorization: Bearer …` (or `token …`) header. */
export function bearer(req: IncomingMessage): string | undefined {
  const match = /^(?:Bearer|token)\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

export function listenOnLoopback(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

export function closeServer(server: Server | undefined): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
