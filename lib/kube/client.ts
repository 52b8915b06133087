import type { IncomingMessage } from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeConfig } from '@kubernetes/client-node';
import { SvcError, errorText } from '../errors.ts';
import { Agent, request } from '../node-http.ts';
import type { KubeObject, KubeList, WatchEvent } from './resources.ts';

/** The one field manager of every server-side apply the operator issues. */
const FIELD_MANAGER = 'svc-operator';

/**
 * A failed API call, translated at this boundary. `kube_api_error`: the API server answered with
 * `status` and its Status `reason`; `kube_unreachable` (status 503): no answer at all.
 */
export class KubeApiError extends SvcError {
  readonly reason: string;

  /** `status` 0 means the API server was not reached. */
  constructor(status: number, reason: string, message: string, cause?: unknown) {
    super(status === 0 ? 'kube_unreachable' : 'kube_api_error', message, {
      status: status === 0 ? 503 : status,
      cause,
    });
    this.name = 'KubeApiError';
    this.reason = reason;
  }
}

/** The API server answered this call with `status`. */
function answered(err: unknown, status: number): boolean {
  return err instanceof KubeApiError && err.code === 'kube_api_error' && err.status === status;
}

export function isNotFound(err: unknown): boolean {
  return answered(err, 404);
}

export function isConflict(err: unknown): boolean {
  return answered(err, 409);
}

export function isGone(err: unknown): boolean {
  return answered(err, 410);
}

export interface RequestObserver {
  (verb: string, code: number): void;
}

interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

/** Settings of a client (see `KubeClient.create`). */
export interface KubeClientOptions {
  /**
   * Deadline of one API call, from sending it to the last byte of the answer (of a watch: to its
   * response headers); a call past it fails with `kube_unreachable` (reason `Timeout`) and its
   * connection is dropped, so a black-holed connection is not reused. Default 30 s.
   */
  readonly requestTimeoutMs?: number;
}

/** What a watch does besides delivering events. */
export interface WatchOptions {
  readonly signal?: AbortSignal;
  /**
   * The watch fails with `kube_unreachable` (reason `WatchIdle`) when nothing at all (no event, no
   * bookmark, no byte) arrived for this long; unset, only the server ends it.
   */
  readonly idleTimeoutMs?: number;
  /** Called once the server accepted the watch (its response headers arrived). */
  readonly onOpen?: () => void;
}

/** The default deadline of one API call. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * A lean API client over a client-node `KubeConfig` (which loads kubeconfig files or the in-cluster
 * service account and supplies credentials). Requests go through one keep-alive agent, so the
 * operator reuses TLS connections instead of opening one per call, and every request is counted in
 * one place (`observe`), which the metrics and the benchmark read.
 */
export class KubeClient {
  readonly server: URL;
  private readonly kc: KubeConfig;
  private readonly agent: Agent;
  private readonly observe: RequestObserver;
  private readonly requestTimeoutMs: number;
  private cachedAuth: { headers: Record<string, string>; until: number } | undefined;

  private constructor(kc: KubeConfig, server: URL, agent: Agent, observe: RequestObserver, timeoutMs: number) {
    this.kc = kc;
    this.server = server;
    this.agent = agent;
    this.observe = observe;
    this.requestTimeoutMs = timeoutMs;
  }

  static async create(
    kc: KubeConfig,
    observe: RequestObserver = () => {},
    options: KubeClientOptions = {},
  ): Promise<KubeClient> {
    const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
      throw new SvcError('kube_config', `requestTimeoutMs must be a positive integer, got ${timeoutMs}`, {
        status: 400,
      });
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new SvcError('kube_config', 'kubeconfig has no current cluster', { status: 400 });
    const server = new URL(cluster.server);
    const tls: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(tls);
    // Keep every idle connection a burst opened (the default keeps 16 and closes the rest): a new TLS
    // connection costs the API server a handshake and a client-certificate verification.
    const common = { keepAlive: true, maxFreeSockets: 256 };
    const agent =
      server.protocol === 'https:'
        ? new https.Agent({
            ...common,
            ca: tls.ca,
            cert: tls.cert,
            key: tls.key,
            ...(tls.rejectUnauthorized !== undefined ? { rejectUnauthorized: tls.rejectUnauthorized } : {}),
            ...(tls.servername ? { servername: tls.servername } : {}),
          })
        : new Agent(common);
    return new KubeClient(kc, server, agent, observe, timeoutMs);
  }

  close(): void {
    this.agent.destroy();
  }

  async get<T extends KubeObject>(path: string): Promise<T> {
    return (await this.request('GET', path)) as T;
  }

  async list<T extends KubeObject>(path: string, query: RequestOptions['query'] = {}): Promise<KubeList<T>> {
    return (await this.request('GET', path, { query })) as KubeList<T>;
  }

  /** Server-side apply (field manager `svc-operator`, force): `path` is the object's own path. */
  async apply<T extends KubeObject>(path: string, object: KubeObject): Promise<T> {
    return (await this.request('PATCH', path, {
      query: { fieldManager: FIELD_MANAGER, force: true },
      body: object,
      contentType: 'application/apply-patch+yaml',
    })) as T;
  }

  async create<T extends KubeObject>(path: string, object: KubeObject): Promise<T> {
    return (await this.request('POST', path, { query: { fieldManager: FIELD_MANAGER }, body: object })) as T;
  }

  async replace<T extends KubeObject>(path: string, object: KubeObject): Promise<T> {
    return (await this.request('PUT', path, { query: { fieldManager: FIELD_MANAGER }, body: object })) as T;
  }

  async delete(path: string): Promise<void> {
    await this.request('DELETE', path, { body: { propagationPolicy: 'Background' } });
  }

  /**
   * Streams a watch: resolves when the server ends it (its `timeoutSeconds`), rejects on a transport
   * or HTTP error, or when it stays silent past `idleTimeoutMs`. `onEvent` runs for each event
   * line, in order.
   */
  async watch(
    path: string,
    query: RequestOptions['query'],
    onEvent: (event: WatchEvent) => void,
    options: WatchOptions = {},
  ): Promise<void> {
    const { signal, idleTimeoutMs, onOpen } = options;
    const res = await this.send(
      'GET',
      path,
      { query: { ...query, watch: true }, ...(signal ? { signal } : {}) },
      'WATCH',
      true,
    );
    if (res.statusCode !== 200) throw await errorFrom(res);
    onOpen?.();
    const lines = createInterface({ input: res, crlfDelay: Infinity });
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      let idle: NodeJS.Timeout | undefined;
      const fail = (err: unknown): void => {
        if (failed) return;
        failed = true;
        clearTimeout(idle);
        reject(err instanceof Error ? err : new Error(String(err)));
        lines.close();
        res.destroy();
      };
      const armIdle = (): void => {
        if (idleTimeoutMs === undefined) return;
        clearTimeout(idle);
        idle = setTimeout(
          () => fail(new KubeApiError(0, 'WatchIdle', `watch ${path} received nothing for ${idleTimeoutMs} ms`)),
          idleTimeoutMs,
        );
      };
      armIdle();
      res.on('data', armIdle);
      lines.on('line', (line) => {
        if (failed || line.trim() === '') return;
        let event: WatchEvent;
        try {
          event = JSON.parse(line) as WatchEvent;
        } catch (err) {
          fail(new KubeApiError(500, 'BadWatchEvent', `undecodable watch event: ${errorText(err)}`));
          return;
        }
        try {
          onEvent(event);
        } catch (err) {
          fail(err);
        }
      });
      res.on('error', (err) => fail(new KubeApiError(0, 'WatchBroken', `watch ${path} broke: ${errorText(err)}`, err)));
      res.on('aborted', () => fail(new KubeApiError(0, 'WatchBroken', `watch ${path} aborted`)));
      lines.on('close', () => {
        clearTimeout(idle);
        if (!failed) resolve();
      });
    });
  }

  /** One API call with the client's deadline (and the caller's `signal`, if any); the parsed answer. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const deadline = AbortSignal.timeout(this.requestTimeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    let res: IncomingMessage;
    let text: string;
    try {
      res = await this.send(method, path, { ...options, signal }, method);
      text = await readBody(res);
    } catch (err) {
      if (!deadline.aborted) throw err;
      throw new KubeApiError(
        0,
        'Timeout',
        `${method} ${path.split('?')[0]}: no answer within ${this.requestTimeoutMs} ms`,
        err,
      );
    }
    if (res.statusCode === undefined || res.statusCode >= 300)
      throw errorFromText(res.statusCode ?? 0, text, method, path);
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  }

  /** Credentials headers; cached briefly (token files are re-read by client-node's authenticators). */
  private async authHeaders(): Promise<Record<string, string>> {
    const now = Date.now();
    if (this.cachedAuth && this.cachedAuth.until > now) return this.cachedAuth.headers;
    const opts: https.RequestOptions = {};
    await this.kc.applyToHTTPSOptions(opts);
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(opts.headers ?? {})) {
      if (typeof value === 'string') headers[key] = value;
    }
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    this.cachedAuth = { headers, until: now + 10_000 };
    return headers;
  }

  /**
   * Sends one request; resolves with the response once its headers arrive. `headersDeadline` (for
   * watches, whose body never ends by itself) fails the request when the headers take longer than
   * the client's deadline; other calls are bounded by `request`'s signal.
   */
  private async send(
    method: string,
    path: string,
    options: RequestOptions,
    verb: string,
    headersDeadline = false,
  ): Promise<IncomingMessage> {
    const url = new URL(path, this.server);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { accept: 'application/json', ...(await this.authHeaders()) };
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    if (body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const transport = url.protocol === 'https:' ? https.request : request;
    return await new Promise<IncomingMessage>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const req = transport(
        url,
        { method, headers, agent: this.agent, ...(options.signal ? { signal: options.signal } : {}) },
        (res) => {
          clearTimeout(timer);
          this.observe(verb, res.statusCode ?? 0);
          resolve(res);
        },
      );
      if (headersDeadline) {
        timer = setTimeout(() => {
          const reason = `${method} ${url.pathname}: no answer within ${this.requestTimeoutMs} ms`;
          req.destroy(new KubeApiError(0, 'Timeout', reason));
        }, this.requestTimeoutMs);
      }
      req.on('error', (err) => {
        clearTimeout(timer);
        this.observe(verb, 0);
        reject(
          err instanceof KubeApiError
            ? err
            : new KubeApiError(0, 'Unreachable', `${method} ${url.pathname}: ${errorText(err)}`, err),
        );
      });
      req.end(body);
    });
  }
}

async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function errorFrom(res: IncomingMessage): Promise<KubeApiError> {
  return errorFromText(res.statusCode ?? 0, await readBody(res), 'GET', res.url ?? '');
}

function errorFromText(status: number, text: string, method: string, path: string): KubeApiError {
  let reason = 'Unknown';
  let message = text.slice(0, 500);
  try {
    const status = JSON.parse(text) as { reason?: string; message?: string };
    reason = status.reason ?? reason;
    message = status.message ?? message;
  } catch {
    // not a Status object; keep the raw (truncated) text
  }
  return new KubeApiError(status, reason, `${method} ${path.split('?')[0]}: ${status} ${reason}: ${message}`);
}
