import type { AddressInfo } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { createServer } from '../../lib/node-http.ts';

/**
 * An OpenID issuer for tests of svc's OpenID client: a real HTTP server on loopback that signs real
 * JWTs with jose, and that a test makes misbehave one way at a time through `behaviour` (oidc-provider,
 * used by the login tests, only ever sends valid responses). Its token endpoint answers any code.
 */
export const TEST_CLIENT_ID = 'svc-client';
export const TEST_CLIENT_SECRET = 'client-secret-for-hs256-attack-0123456789';

export interface IssuerBehaviour {
  discovery: (base: Record<string, unknown>) => Record<string, unknown>;
  claims: (base: JWTPayload) => JWTPayload;
  /** Replaces the signed ID token (undefined: none in the response). */
  idToken?: (claims: JWTPayload) => Promise<string | undefined>;
  tokenType: string;
  userInfo: (base: Record<string, unknown>) => Record<string, unknown>;
  /** The status the revocation endpoint answers for a token of this type (`token_type_hint`). */
  revocation: (hint: string) => number;
  /** Paths on which the server drops the connection without answering (a provider gone mid-way). */
  hangUp: readonly string[];
  /** The access and refresh tokens the token endpoint issues (a login and a refresh alike). */
  tokens: (sign: (claims: JWTPayload) => Promise<string>) => Promise<{ access: string; refresh: string }>;
}

export interface TestIssuer {
  readonly issuer: string;
  behaviour: IssuerBehaviour;
  readonly requests: { jwks: number; token: number };
  /**
   * Each revocation request of the authenticated client, in order: the token type hint and the
   * token. A request without the client's credentials (RFC 7009 §2.1) is refused (401) and not listed.
   */
  readonly revocations: { hint: string; token: string }[];
  /** An RS256 JWT signed by the issuer's key (`kid` k1), or by a key outside its key set. */
  sign(claims: JWTPayload, key?: 'issuer' | 'other', kid?: string): Promise<string>;
  /** Key rotation: a new key pair published in the key set under `kid` (its tokens are signed with `signAs`). */
  addKey(kid: string): Promise<void>;
  /** Key rotation: `kid` no longer published (its private key is kept, as a thief of it would). */
  removeKey(kid: string): void;
  /** An RS256 JWT signed by the private key of `kid`, published or not. */
  signAs(claims: JWTPayload, kid: string): Promise<string>;
  /** Back to normal behaviour and only key k1 published; counters zeroed. */
  reset(): void;
  close(): Promise<void>;
}

export const normalBehaviour = (): IssuerBehaviour => ({
  discovery: (base) => base,
  claims: (base) => base,
  tokenType: 'Bearer',
  userInfo: (base) => base,
  revocation: () => 200,
  hangUp: [],
  tokens: () => Promise.resolve({ access: 'access-token-secret', refresh: 'refresh-token-secret' }),
});

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Whether a request carries this client's id and secret, as HTTP Basic (form-encoded) or in the form. */
function clientAuthenticated(req: IncomingMessage, form: URLSearchParams): boolean {
  const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  const [id, secret] = basic
    ? Buffer.from(basic[1] ?? '', 'base64')
        .toString('utf8')
        .split(':')
        .map((v) => decodeURIComponent(v.replace(/\+/g, ' ')))
    : [form.get('client_id'), form.get('client_secret')];
  return id === TEST_CLIENT_ID && secret === TEST_CLIENT_SECRET;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export async function startTestIssuer(): Promise<TestIssuer> {
  const pair = await generateKeyPair('RS256');
  const other: CryptoKey = (await generateKeyPair('RS256')).privateKey;
  const publicJwk = async (key: CryptoKey, kid: string) => ({
    ...(await exportJWK(key)),
    kid,
    alg: 'RS256',
    use: 'sig',
  });
  const k1 = await publicJwk(pair.publicKey, 'k1');
  const privateKeys = new Map<string, CryptoKey>([['k1', pair.privateKey]]);
  let published = new Map<string, unknown>([['k1', k1]]);
  const requests = { jwks: 0, token: 0 };
  const revocations: { hint: string; token: string }[] = [];
  const sign = (claims: JWTPayload, key: 'issuer' | 'other' = 'issuer', kid = 'k1') =>
    new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(key === 'issuer' ? pair.privateKey : other);
  const signAs = (claims: JWTPayload, kid: string) => {
    const key = privateKeys.get(kid);
    if (!key) throw new Error(`test issuer: no key ${kid}`);
    return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).sign(key);
  };
  let issuer = '';
  const state: TestIssuer = {
    get issuer() {
      return issuer;
    },
    behaviour: normalBehaviour(),
    requests,
    revocations,
    sign,
    signAs,
    async addKey(kid) {
      const added = await generateKeyPair('RS256');
      privateKeys.set(kid, added.privateKey);
      published.set(kid, await publicJwk(added.publicKey, kid));
    },
    removeKey(kid) {
      published.delete(kid);
    },
    reset() {
      state.behaviour = normalBehaviour();
      published = new Map([['k1', k1]]);
      requests.jwks = 0;
      requests.token = 0;
      revocations.length = 0;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const { behaviour } = state;
    const path = new URL(req.url ?? '/', issuer).pathname;
    if (behaviour.hangUp.includes(path)) {
      req.socket.destroy();
      return;
    }
    if (path === '/.well-known/openid-configuration') {
      return json(
        res,
        200,
        behaviour.discovery({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          userinfo_endpoint: `${issuer}/me`,
          revocation_endpoint: `${issuer}/revoke`,
          id_token_signing_alg_values_supported: ['RS256'],
          authorization_response_iss_parameter_supported: true,
        }),
      );
    }
    if (path === '/jwks') {
      requests.jwks++;
      return json(res, 200, { keys: [...published.values()] });
    }
    if (path === '/revoke') {
      const form = new URLSearchParams(await readBody(req));
      if (!clientAuthenticated(req, form)) return json(res, 401, { error: 'invalid_client' });
      const hint = form.get('token_type_hint') ?? '';
      revocations.push({ hint, token: form.get('token') ?? '' });
      const status = behaviour.revocation(hint);
      return json(res, status, status === 200 ? {} : { error: 'temporarily_unavailable' });
    }
    if (path === '/token') {
      requests.token++;
      const now = Math.floor(Date.now() / 1000);
      const claims = behaviour.claims({
        iss: issuer,
        sub: 'user-1',
        aud: TEST_CLIENT_ID,
        iat: now,
        exp: now + 300,
        nonce: 'nonce-1',
        email: 'ada@example.com',
        email_verified: true,
      });
      const idToken = behaviour.idToken ? await behaviour.idToken(claims) : await sign(claims);
      const tokens = await behaviour.tokens((payload) => sign(payload));
      return json(res, 200, {
        access_token: tokens.access,
        refresh_token: tokens.refresh,
        token_type: behaviour.tokenType,
        ...(idToken === undefined ? {} : { id_token: idToken }),
      });
    }
    if (path === '/me')
      return json(res, 200, behaviour.userInfo({ sub: 'user-1', email: 'ada@example.com', email_verified: true }));
    json(res, 404, {});
  };

  const server: Server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}
