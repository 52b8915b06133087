import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { bearer, closeServer, listenOnLoopback, readBody, s256, sendHtml, sendJson } from './idp1-server.ts';

/**
 * A local server speaking the idp2 (code-hosting platform) OAuth app contract as its public docs
 * describe it: `GET /login/oauth/authorize`, `POST /login/oauth/access_token` (errors come back with
 * HTTP 200 and an `error` field; JSON only with `Accept: application/json`), and on the API base
 * (`/api/v3`, the enterprise-server layout, so a base URL with a path is exercised)
 * `GET /user/emails` and `DELETE /applications/{client_id}/token` under HTTP basic auth.
 * The signing-in user's addresses come from `nextEmails`; the consent screen is skipped.
 */
export interface Idp2Email {
  email: string;
  primary: boolean;
  verified: boolean;
  visibility: 'public' | 'private' | null;
}

interface IssuedCode {
  readonly redirectUri: string;
  readonly scope: string;
  readonly challenge: string | undefined;
  readonly emails: Idp2Email[];
  readonly expiresAt: number;
}

interface IssuedToken {
  readonly emails: Idp2Email[];
  readonly scope: string;
  revoked: boolean;
}

/** One `DELETE /applications/{client_id}/token` as received. */
export interface RecordedDeletion {
  readonly clientIdInPath: string;
  /** The decoded `user:password` of the basic credentials, or undefined when none were sent. */
  readonly basic: string | undefined;
  readonly accessToken: string | undefined;
  readonly status: number;
}

export interface RecordedTokenRequest {
  readonly codeVerifier: string | undefined;
  readonly redirectUri: string | undefined;
  readonly error: string | undefined;
}

export const API_PREFIX = '/api/v3';

export class Idp2Server {
  readonly clientId = `Iv1.${randomBytes(8).toString('hex')}`;
  readonly clientSecret = randomBytes(20).toString('hex');
  /** The OAuth app's registered callback URLs; the first is where redirect mismatches are reported. */
  redirectUris: string[] = [];
  nextEmails: Idp2Email[] = [
    { email: 'octo@example.com', primary: true, verified: true, visibility: 'private' },
    { email: 'octo@users.noreply.example', primary: false, verified: true, visibility: null },
  ];
  /** When set, authorization requests are answered with this error (e.g. the user denied access). */
  denyWith: { error: string; error_description?: string } | undefined;
  /** When set, the token endpoint answers this status and JSON body. */
  tokenFailure: { status: number; body: unknown } | undefined;
  /** When set, token deletions answer this status (simulated outage). */
  deleteStatus: number | undefined;
  readonly authorizeRequests: URLSearchParams[] = [];
  readonly tokenRequests: RecordedTokenRequest[] = [];
  readonly issuedTokens: string[] = [];
  readonly deletions: RecordedDeletion[] = [];
  /** The user agent of each API request (the real API refuses requests without one). */
  readonly apiUserAgents: string[] = [];

  private readonly codes = new Map<string, IssuedCode>();
  private readonly tokens = new Map<string, IssuedToken>();
  private server: Server | undefined;
  private base: URL | undefined;

  get url(): URL {
    if (!this.base) throw new Error('idp2 server not started');
    return this.base;
  }

  get apiBaseUrl(): string {
    return new URL(API_PREFIX, this.url).href;
  }

  get loginUrl(): string {
    return new URL('/login', this.url).href;
  }

  providerConfig(name = 'idp2'): Record<string, unknown> {
    const at = (path: string): string => new URL(path, this.url).href;
    return {
      name,
      type: 'idp2',
      client_id: this.clientId,
      client_secret: this.clientSecret,
      scopes: ['user:email'],
      authorize_url: at('/login/oauth/authorize'),
      token_url: at('/login/oauth/access_token'),
      api_base_url: this.apiBaseUrl,
      login_url: this.loginUrl,
    };
  }

  isActive(token: string): boolean {
    const t = this.tokens.get(token);
    return t !== undefined && !t.revoked;
  }

  /** The visitor's browser at the provider: opens the authorization URL and returns where it is sent. */
  async authorize(authorizationUrl: string | URL): Promise<URL> {
    const response = await fetch(authorizationUrl, { redirect: 'manual' });
    const location = response.headers.get('location');
    if (response.status !== 302 || !location) {
      throw new Error(`idp2 authorize answered ${response.status}: ${await response.text()}`);
    }
    return new URL(location);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => sendJson(res, 500, { message: String(err) }));
    });
    this.base = new URL(`http://127.0.0.1:${await listenOnLoopback(this.server)}`);
    return this;
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const route = `${req.method} ${url.pathname}`;
    if (route === 'GET /login/oauth/authorize') return this.authorizeEndpoint(url.searchParams, res);
    if (route === 'POST /login/oauth/access_token') return this.tokenEndpoint(req, await readBody(req), res);
    if (route === 'GET /login') return sendHtml(res, 200, 'Sign in');
    if (url.pathname.startsWith(`${API_PREFIX}/`)) {
      this.apiUserAgents.push(req.headers['user-agent'] ?? '');
      if (!req.headers['user-agent']) {
        return sendJson(res, 403, {
          message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header',
        });
      }
      const path = url.pathname.slice(API_PREFIX.length);
      if (route === `GET ${API_PREFIX}/user/emails`) return this.emailsEndpoint(req, res);
      const deletion = /^\/applications\/([^/]+)\/token$/.exec(path);
      if (req.method === 'DELETE' && deletion) {
        return this.deleteTokenEndpoint(decodeURIComponent(deletion[1] ?? ''), req, await readBody(req), res);
      }
    }
    sendJson(res, 404, { message: 'Not Found' });
  }

  private authorizeEndpoint(params: URLSearchParams, res: ServerResponse): void {
    this.authorizeRequests.push(params);
    if (params.get('client_id') !== this.clientId) return sendHtml(res, 404, 'Not Found');
    const registered = this.redirectUris[0];
    if (!registered) return sendHtml(res, 400, 'The application has no callback URL');
    const redirectUri = params.get('redirect_uri') ?? registered;
    const state = params.get('state');
    const back = (to: string, values: Record<string, string>): void => {
      const target = new URL(to);
      for (const [k, v] of Object.entries({ ...values, ...(state !== null ? { state } : {}) }))
        target.searchParams.set(k, v);
      res.writeHead(302, { location: target.href });
      res.end();
    };
    // A callback URL that is not registered is reported to the registered one, never followed.
    if (!this.redirectUris.includes(redirectUri)) {
      return back(registered, {
        error: 'redirect_uri_mismatch',
        error_description: 'The redirect_uri MUST match the registered callback URL for this application.',
      });
    }
    const challenge = params.get('code_challenge') ?? undefined;
    if (challenge !== undefined && params.get('code_challenge_method') !== 'S256') {
      return back(redirectUri, { error: 'invalid_request', error_description: 'code_challenge_method must be S256' });
    }
    if (this.denyWith) return back(redirectUri, this.denyWith);
    const code = randomBytes(10).toString('hex');
    this.codes.set(code, {
      redirectUri,
      scope: (params.get('scope') ?? '').split(/[ ,]+/).filter(Boolean).join(','),
      challenge,
      emails: this.nextEmails.map((e) => ({ ...e })),
      expiresAt: Date.now() + 600_000,
    });
    back(redirectUri, { code });
  }

  private tokenEndpoint(req: IncomingMessage, body: string, res: ServerResponse): void {
    const params = (req.headers['content-type'] ?? '').startsWith('application/json')
      ? new URLSearchParams(JSON.parse(body) as Record<string, string>)
      : new URLSearchParams(body);
    const json = (req.headers.accept ?? '').includes('application/json');
    const answer = (status: number, values: Record<string, string>): void => {
      if (json) return sendJson(res, status, values);
      res.writeHead(status, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' });
      res.end(new URLSearchParams(values).toString());
    };
    const record = (error: string | undefined): void => {
      this.tokenRequests.push({
        codeVerifier: params.get('code_verifier') ?? undefined,
        redirectUri: params.get('redirect_uri') ?? undefined,
        error,
      });
    };
    // Like the real endpoint, refusals are HTTP 200 with an `error` field.
    const fail = (error: string, description: string): void => {
      record(error);
      answer(200, { error, error_description: description, error_uri: 'https://docs.example/oauth-errors' });
    };
    if (this.tokenFailure) {
      record('forced');
      return sendJson(res, this.tokenFailure.status, this.tokenFailure.body);
    }
    if (params.get('client_id') !== this.clientId || params.get('client_secret') !== this.clientSecret)
      return fail('incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.');
    const codeText = params.get('code') ?? '';
    const code = this.codes.get(codeText);
    this.codes.delete(codeText);
    if (!code || code.expiresAt < Date.now())
      return fail('bad_verification_code', 'The code passed is incorrect or expired.');
    const redirectUri = params.get('redirect_uri');
    if (redirectUri !== null && redirectUri !== code.redirectUri)
      return fail(
        'redirect_uri_mismatch',
        'The redirect_uri MUST match the registered callback URL for this application.',
      );
    if (code.challenge !== undefined) {
      const verifier = params.get('code_verifier');
      if (!verifier || s256(verifier) !== code.challenge)
        return fail('invalid_grant', 'The code_verifier does not match the code_challenge.');
    }
    const accessToken = `gho_${randomBytes(18).toString('hex')}`;
    this.tokens.set(accessToken, { emails: code.emails, scope: code.scope, revoked: false });
    this.issuedTokens.push(accessToken);
    record(undefined);
    answer(200, { access_token: accessToken, token_type: 'bearer', scope: code.scope });
  }

  private emailsEndpoint(req: IncomingMessage, res: ServerResponse): void {
    const token = bearer(req);
    if (token === undefined) return sendJson(res, 401, { message: 'Requires authentication' });
    const issued = this.tokens.get(token);
    if (!issued || issued.revoked) return sendJson(res, 401, { message: 'Bad credentials' });
    const scopes = issued.scope.split(',');
    if (!scopes.includes('user:email') && !scopes.includes('user')) return sendJson(res, 404, { message: 'Not Found' });
    sendJson(res, 200, issued.emails);
  }

  private deleteTokenEndpoint(clientIdInPath: string, req: IncomingMessage, body: string, res: ServerResponse): void {
    const basicMatch = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const basic = basicMatch ? Buffer.from(basicMatch[1] ?? '', 'base64').toString('utf8') : undefined;
    let accessToken: string | undefined;
    try {
      const parsed = JSON.parse(body) as { access_token?: unknown };
      if (typeof parsed.access_token === 'string') accessToken = parsed.access_token;
    } catch {
      accessToken = undefined;
    }
    const respond = (status: number, message?: string): void => {
      this.deletions.push({ clientIdInPath, basic, accessToken, status });
      if (message === undefined) {
        res.writeHead(status);
        res.end();
      } else sendJson(res, status, { message });
    };
    if (this.deleteStatus !== undefined) return respond(this.deleteStatus, 'Server Error');
    if (basic !== `${this.clientId}:${this.clientSecret}` || clientIdInPath !== this.clientId)
      return respond(401, 'Bad credentials');
    if (accessToken === undefined) return respond(422, 'Invalid request.\n\n"access_token" wasn\'t supplied.');
    const issued = this.tokens.get(accessToken);
    if (!issued || issued.revoked) return respond(404, 'Not Found');
    issued.revoked = true;
    respond(204);
  }
}

export async function startIdp2Server(): Promise<Idp2Server> {
  return new Idp2Server().start();
}
