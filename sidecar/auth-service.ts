import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AuthServiceConfig } from '../lib/config/frontend.ts';
import { errorText } from '../lib/errors.ts';
import { closeServer, listen, portOf, type ListenAddress } from '../lib/listen.ts';
import type { Logger } from '../lib/logger.ts';
import { createServer } from '../lib/node-http.ts';
import { outboundRequest } from '../lib/outbound-http.ts';
import type { ShareRoute } from '../lib/share/spec.ts';
import { ProviderError, unreachable, type ProviderFailure } from './providers/types.ts';
import type { Session, SessionCookies } from './session.ts';

/** What a re-check of a session came to. */
export type RenewOutcome =
  | { readonly result: 'refreshed'; readonly session: Session }
  /** The provider confirmed an identity the share no longer admits. */
  | { readonly result: 'refused' }
  /** The session is over for good (tokens refused as invalid, or logged out): a new login. */
  | { readonly result: 'ended'; readonly code: ProviderFailure }
  /** The provider (or the auth endpoint) could not answer; a new login. */
  | { readonly result: 'failed'; readonly code: ProviderFailure };

/** What a share pod's revoke call came to: the provider revoked the tokens (or did so before), or not. */
export type RevokeOutcome =
  { readonly result: 'revoked' } | { readonly result: 'failed'; readonly code: ProviderFailure };

/** The paths of the internal calls on the auth endpoint's internal port. */
export const RENEW_PATH = '/internal/v1/renew';
export const REVOKE_PATH = '/internal/v1/revoke';
/** Headers of the internal call: which share asks, and its credential (lib/share-keys.ts). */
export const SHARE_HEADER = 'svc-share';
/** A renew or revoke request is one sealed session entry (a cookie is at most 4000 bytes) in JSON. */
const MAX_BODY_BYTES = 8192;
const REMOTE_TIMEOUT_MS = 15_000;

/**
 * A share pod's way to renew a session: it holds no client secret, so it sends the session entry
 * (sealed under its share's keys) to the auth endpoint's internal port with its credential; the
 * answer is the renewed entry sealed under the same keys, or why not.
 */
export function remoteRenewer(
  service: AuthServiceConfig,
  sessions: Pick<SessionCookies, 'seal' | 'open'>,
): (session: Session, share: ShareRoute) => Promise<RenewOutcome> {
  const url = new URL(RENEW_PATH, service.url);
  return async (session, share) => {
    const sealed = sessions.seal(session);
    if (!sealed) return { result: 'failed', code: 'provider_error' };
    let status: number;
    let answer: Answer | undefined;
    try {
      ({ status, answer } = await postEntry(url, service, share.token, sealed));
    } catch {
      return { result: 'failed', code: 'provider_unreachable' };
    }
    if (status !== 200 || !answer) return { result: 'failed', code: 'provider_error' };
    const code = isFailure(answer.code) ? answer.code : 'provider_error';
    if (answer.result === 'refreshed' && typeof answer.session === 'string') {
      const renewed = sessions.open(share, answer.session);
      // Only the very session asked about: its id, share and provider are the old one's.
      if (renewed && renewed.id === session.id && renewed.provider === session.provider)
        return { result: 'refreshed', session: renewed };
      return { result: 'failed', code: 'provider_error' };
    }
    if (answer.result === 'refused') return { result: 'refused' };
    if (answer.result === 'ended') return { result: 'ended', code };
    return { result: 'failed', code };
  };
}

/**
 * A share pod's way to revoke a session's tokens at logout: it holds no client secret, so it sends
 * the session entry (sealed under its share's keys) to the auth endpoint's internal port with its
 * credential, as for a renewal. Throws a ProviderError (never naming a token) when the tokens were
 * not revoked, so that logout logs it and clears the cookie anyway.
 */
export function remoteRevoker(
  service: AuthServiceConfig,
  sessions: Pick<SessionCookies, 'seal'>,
): (session: Session) => Promise<void> {
  const url = new URL(REVOKE_PATH, service.url);
  return async (session) => {
    const sealed = sessions.seal(session);
    if (!sealed) throw new ProviderError(session.provider, 'revocation: this share pod holds no keys for the session');
    let reply: { status: number; answer: Answer | undefined };
    try {
      reply = await postEntry(url, service, session.share, sealed);
    } catch (err) {
      throw unreachable(session.provider, `revocation: the auth endpoint cannot be reached: ${errorText(err)}`, err);
    }
    if (reply.status === 200 && reply.answer?.result === 'revoked') return;
    const code = isFailure(reply.answer?.code) ? reply.answer.code : 'provider_error';
    throw new ProviderError(
      session.provider,
      `revocation through the auth endpoint failed (HTTP ${reply.status}, ${code})`,
      undefined,
      code,
    );
  };
}

/** The JSON answer of an internal call. */
interface Answer {
  readonly result?: unknown;
  readonly session?: unknown;
  readonly code?: unknown;
}

/** One internal call: `{session: <entry>}` posted for share `token` with its credential. Throws when unreachable. */
async function postEntry(
  url: URL,
  service: AuthServiceConfig,
  token: string,
  sealed: string,
): Promise<{ status: number; answer: Answer | undefined }> {
  const response = await outboundRequest(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${service.credential}`,
      [SHARE_HEADER]: token,
    },
    body: JSON.stringify({ session: sealed }),
    timeoutMs: REMOTE_TIMEOUT_MS,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  let answer: Answer | undefined;
  try {
    answer = JSON.parse(response.body.toString('utf8')) as Answer;
  } catch {
    answer = undefined;
  }
  return { status: response.status, answer };
}

function isFailure(value: unknown): value is ProviderFailure {
  return value === 'provider_error' || value === 'invalid_token' || value === 'provider_unreachable';
}

/** What the internal endpoint asks of the auth endpoint's Authenticator: renewals and revocations for share pods. */
export interface RenewService {
  /**
   * Renews the sealed session entry of share `token` for a caller that presented `credential`;
   * `unauthorized` when the credential is not that share's (or there is no such OAuth share),
   * `invalid` when the entry does not open as a session of that share.
   */
  renewFor(
    token: string,
    credential: string,
    sealed: string,
  ): Promise<{ readonly result: 'unauthorized' | 'invalid' } | RenewOutcome>;
  /** The renewed session sealed as its share's entry, as the cookie will store it (undefined when it cannot be). */
  seal(session: Session): string | undefined;
  /**
   * Revokes at the provider the tokens of the sealed session entry of share `token` (a logout at
   * that share's pod), for a caller that presented `credential`; `unauthorized` and `invalid` as
   * for renewFor. Idempotent: a session already logged out here is answered `revoked`.
   */
  revokeFor(
    token: string,
    credential: string,
    sealed: string,
  ): Promise<{ readonly result: 'unauthorized' | 'invalid' } | RevokeOutcome>;
}

export interface InternalEndpoint {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The auth endpoint's internal listener (its own port and ClusterIP Service, never behind the
 * public Ingress): `POST /internal/v1/renew` and `POST /internal/v1/revoke` from share pods, each
 * with one session entry of the share as its body. Each call names its share
 * (`svc-share`) and carries that share's credential (`authorization: Bearer`), compared in
 * constant time with the one derived from the installation key; the body is bounded.
 */
export async function startInternalEndpoint(
  address: ListenAddress,
  service: RenewService,
  log: Logger,
): Promise<InternalEndpoint> {
  const server: Server = createServer((req, res) => {
    handle(req, res, service, log).catch((err: unknown) => {
      log.error({ err: errorText(err) }, 'internal endpoint: request failed');
      answer(res, 500, { error: 'internal error' });
    });
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 10_000;
  await listen(server, address, 'internal endpoint');
  log.info({ address: address.host, port: portOf(server) }, 'auth endpoint internal port listening');
  return { port: portOf(server), close: () => closeServer(server) };
}

async function handle(req: IncomingMessage, res: ServerResponse, service: RenewService, log: Logger): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (path !== RENEW_PATH && path !== REVOKE_PATH) return answer(res, 404, { error: 'not found' });
  if (req.method !== 'POST') return answer(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
  const declared = Number(req.headers['content-length'] ?? 0);
  if (!Number.isFinite(declared) || declared > MAX_BODY_BYTES) return answer(res, 413, { error: 'body too large' });
  const body = await readBounded(req);
  if (body === undefined) return answer(res, 413, { error: 'body too large' });
  const token = req.headers[SHARE_HEADER];
  const authorization = req.headers.authorization ?? '';
  const credential = authorization.startsWith('Bearer ') ? authorization.slice('Bearer '.length) : '';
  let sealed: unknown;
  try {
    sealed = (JSON.parse(body) as { session?: unknown }).session;
  } catch {
    sealed = undefined;
  }
  if (typeof token !== 'string' || !credential) return answer(res, 401, { error: 'unauthorized' });
  if (typeof sealed !== 'string') return answer(res, 400, { error: 'the body must be {"session": "<entry>"}' });
  const outcome =
    path === REVOKE_PATH
      ? await service.revokeFor(token, credential, sealed)
      : await service.renewFor(token, credential, sealed);
  if (outcome.result === 'unauthorized') {
    log.warn({ share: token, call: path }, 'internal endpoint: credential refused');
    return answer(res, 401, { error: 'unauthorized' });
  }
  if (outcome.result === 'invalid') return answer(res, 400, { error: 'the session entry is not valid for this share' });
  if (outcome.result === 'refreshed') {
    const entry = service.seal(outcome.session);
    // Renewed tokens too large for any cookie: the share pod starts a new login.
    if (entry === undefined) return answer(res, 200, { result: 'failed', code: 'provider_error' });
    return answer(res, 200, { result: 'refreshed', session: entry });
  }
  return answer(res, 200, { result: outcome.result, ...('code' in outcome ? { code: outcome.code } : {}) });
}

/** The request body as text, or undefined past MAX_BODY_BYTES (the request is then not read further). */
function readBounded(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, body: object, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    'cache-control': 'no-store',
    ...(status === 413 ? { connection: 'close' } : {}),
    ...headers,
  });
  res.end(text);
}
