import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { REMOTING_PATH } from '../lib/remoting/protocol.ts';
import { errorText } from '../lib/errors.ts';
import { answerHealth, type Readiness } from '../lib/health.ts';
import type { Logger } from '../lib/logger.ts';
import { createServer } from '../lib/node-http.ts';
import { guardUpgradeSocket } from '../lib/upgrade-socket.ts';
import { notConfigured, type Body, type Operation } from './api.ts';
import { apiError, errorBody } from './errors.ts';
import { isFrontendPath, isRegistryPoll, type FrontendApi } from './frontend-api.ts';
import { MEDIA_TYPE } from '../lib/api-client.ts';
import { checkedBody, type OpenApi } from './openapi.ts';
import type { RemotingHub } from './remoting-hub.ts';
import type { Console } from './console/console.ts';
import { storeReadiness } from './readiness.ts';
import { hashesMatch, parseToken } from './tokens.ts';
import type { AccountRecord, ControllerStore, EnvironmentRecord } from './store.ts';
import { environmentOfToken, type EnvironmentOperation } from './tunnel-api.ts';

export const API_PREFIX = '/api/v1';
const OPENAPI_JSON_PATH = `${API_PREFIX}/openapi.json`;

export interface ApiServerOptions {
  readonly store: ControllerStore;
  readonly logger: Logger;
  readonly openapi: OpenApi;
  readonly operations: Map<string, Operation>;
  /** The `/tunnel` operations, authenticated by an environment token (controller/tunnel-api.ts). */
  readonly environmentOperations?: Map<string, EnvironmentOperation>;
  readonly maxBodyBytes: number;
  readonly hub?: RemotingHub;
  /** `/api/v1/frontend/*` for frontend replicas; absent: 501 `tunnel_not_offered` (no `public_frontend`). */
  readonly frontendApi?: FrontendApi;
  /** Takes other upgrades on the API listener (the installation's tunnel endpoint); true when it did. */
  readonly onUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  /** `/healthz`: fails while the controller is wedged (controller/liveness.ts); always ok without it. */
  readonly live?: () => Readiness;
  /** The web console under `/console` (controller/console). */
  readonly console?: Console;
}

/**
 * The controller's HTTP server. Every API request goes through one pipeline, each step with its
 * documented failure: route (404) → POST (405) → `Content-Type: application/svc.v1+json` (415) →
 * `X-TOKEN` account token (401) → body size (413) → JSON object (400) → OpenAPI schema (422) →
 * `agent_controller` configured for `/agent` operations (501) → the operation. Errors are mapped
 * in one place (controller/errors.ts); no stack trace is ever sent.
 */
export function createApiServer(options: ApiServerOptions): Server {
  const openapiJson = JSON.stringify(options.openapi.document);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const logged = logRequest(options.logger, req, res, path);
    route(options, openapiJson, req, res, path, logged).catch((err: unknown) => {
      const { status, body } = errorBody(err);
      if (status >= 500 && body.code === 'internal_error') {
        options.logger.error({ err: errorText(err), path }, 'api request failed');
      }
      send(res, status, body);
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    guardUpgradeSocket(socket);
    const path = (req.url ?? '/').split('?')[0];
    if (path === REMOTING_PATH && options.hub) return options.hub.handleUpgrade(req, socket, head);
    if (options.onUpgrade?.(req, socket, head)) return;
    const status = path === REMOTING_PATH ? '501 Not Implemented' : '404 Not Found';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  return server;
}

/** Who made a request, once authenticated; written into its log line. */
interface RequestLog {
  account?: string;
}

/** Logs each request when it finished: method, path, status, time and account. */
function logRequest(logger: Logger, req: IncomingMessage, res: ServerResponse, path: string): RequestLog {
  const started = performance.now();
  const logged: RequestLog = {};
  res.on('finish', () => {
    const line = {
      method: req.method,
      path,
      status: res.statusCode,
      ms: Math.round(performance.now() - started),
      account: logged.account,
    };
    // Every frontend replica polls the registry every 25 s: an answered poll is routine, not news.
    const routine = isRegistryPoll(req.method, path) && res.statusCode < 300;
    if (routine) logger.debug(line, 'api request');
    else logger.info(line, 'api request');
  });
  return logged;
}

/** Routes a request: the console, the OpenAPI document, `/readyz`, `/healthz`, the frontend API, an operation. */
async function route(
  options: ApiServerOptions,
  openapiJson: string,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  logged: RequestLog,
): Promise<void> {
  if (options.console?.owns(path)) return options.console.handle(req, res, path);
  if (path === OPENAPI_JSON_PATH && (req.method === 'GET' || req.method === 'HEAD')) {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(openapiJson) });
    res.end(req.method === 'HEAD' ? undefined : openapiJson);
    return;
  }
  if (path === '/readyz' && (req.method === 'GET' || req.method === 'HEAD')) {
    const state = await storeReadiness(options.store);
    res.writeHead(state.ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end(`${state.detail}\n`);
    return;
  }
  if (answerHealth(req, res, options.live ? { live: options.live } : {})) return;
  if (isFrontendPath(path)) return serveFrontendApi(options, req, res, path);
  return serveOperation(options, req, res, path, logged);
}

/** `/api/v1/frontend/*`, for the frontend replicas (501 without a `public_frontend` section). */
async function serveFrontendApi(
  options: ApiServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
): Promise<void> {
  if (!options.frontendApi) {
    throw apiError('tunnel_not_offered', 'this controller runs without a public_frontend section: no frontend API');
  }
  const readFrontendBody = async (maxBytes?: number) => {
    if (!isApiMediaType(req.headers['content-type'])) {
      throw apiError('unsupported_media_type', `Content-Type must be ${MEDIA_TYPE}`);
    }
    return readRequest(options, req, res, path.slice(API_PREFIX.length), maxBytes);
  };
  send(res, 200, await options.frontendApi.handle(req, res, path, readFrontendBody));
}

/** An API operation through the pipeline: 404 → 405 → 415 → 401 → 413/400/422 → 501 → the operation. */
async function serveOperation(
  options: ApiServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  logged: RequestLog,
): Promise<void> {
  const opName = path.slice(API_PREFIX.length);
  const operation = path.startsWith(API_PREFIX)
    ? (options.operations.get(opName) ?? options.environmentOperations?.get(opName))
    : undefined;
  if (!operation) throw apiError('not_found', `no API operation at ${path}`);
  if (req.method !== 'POST') {
    res.setHeader('allow', 'POST');
    throw apiError('method_not_allowed', `${path} accepts POST only`);
  }
  if (!isApiMediaType(req.headers['content-type'])) {
    throw apiError('unsupported_media_type', `Content-Type must be ${MEDIA_TYPE}`);
  }
  const caller =
    'environment' in operation
      ? await authenticateEnvironment(options.store, req.headers['x-token'])
      : await authenticate(options.store, req.headers['x-token']);
  logged.account = 'envZId' in caller ? `environment ${caller.envZId}` : caller.id;
  const body = await readRequest(options, req, res, opName);
  if ('environment' in operation) {
    send(res, 200, await operation.handle(caller as EnvironmentRecord, body));
    return;
  }
  if (operation.remote && !options.hub) throw notConfigured();
  send(res, 200, await operation.handle(caller as AccountRecord, body));
}

/** The body as a JSON object checked against the OpenAPI document (400, 413, 422 otherwise). */
async function readRequest(
  options: ApiServerOptions,
  req: IncomingMessage,
  res: ServerResponse,
  opPath: string,
  maxBytes = options.maxBodyBytes,
): Promise<Body> {
  const text = await readBody(req, res, maxBytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw apiError('malformed_json', 'the request body is not valid JSON');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw apiError('malformed_json', 'the request body must be a JSON object');
  }
  return checkedBody(options.openapi, opPath, body);
}

/** The account whose token is in `X-TOKEN` (401 otherwise). */
async function authenticate(store: ControllerStore, header: string | string[] | undefined): Promise<AccountRecord> {
  const refused = () => apiError('unauthorized', 'X-TOKEN must hold a valid account token');
  const parsed = typeof header === 'string' ? parseToken('svca', header.trim()) : undefined;
  if (!parsed) throw refused();
  const account = await store.getAccount(parsed.id);
  if (!account || !hashesMatch(parsed.hash, account.tokenHash)) throw refused();
  return account;
}

/** The environment whose token is in `X-TOKEN` (401 otherwise). */
async function authenticateEnvironment(
  store: ControllerStore,
  header: string | string[] | undefined,
): Promise<EnvironmentRecord> {
  const env = await environmentOfToken(store, typeof header === 'string' ? header : undefined);
  if (!env) throw apiError('unauthorized', 'X-TOKEN must hold a valid environment token');
  return env;
}

/** `application/svc.v1+json`, optionally with `charset=utf-8`. */
function isApiMediaType(header: string | undefined): boolean {
  if (!header) return false;
  const [type, ...params] = header.split(';').map((p) => p.trim().toLowerCase());
  if (type !== MEDIA_TYPE) return false;
  return params.every((p) => p === '' || p === 'charset=utf-8');
}

function send(res: ServerResponse, status: number, payload: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': MEDIA_TYPE,
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(text);
}

/**
 * Reads the body up to `limit` bytes. Too large (by Content-Length, or while reading) is
 * `body_too_large`; the rest of the body is drained (up to 1 MiB more) so the client reads the 413
 * instead of a reset, then the connection is closed.
 */
function readBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<string> {
  const tooLarge = () => {
    res.setHeader('connection', 'close');
    let drained = 0;
    req.on('data', (c: Buffer) => {
      drained += c.length;
      if (drained > 1024 * 1024) req.destroy();
    });
    req.resume();
    return apiError('body_too_large', `the request body exceeds ${limit} bytes`);
  };
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('error', reject);
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
