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
  private cachedAuth: { headers: Record<string, string>; until: number } | undefined;

  private constructor(kc: KubeConfig, server: URL, agent: Agent, observe: RequestObserver) {
    this.kc = kc;
    this.server = server;
    this.agent = agent;
    this.observe = observe;
  }

  static async create(kc: KubeConfig, observe: RequestObserver = () => {}): Promise<KubeClient> {
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
    return new KubeClient(kc, server, agent, observe);
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
   * or HTTP error. `onEvent` runs for each event line, in order.
   */
  async watch(
    path: string,
    query: RequestOptions['query'],
    onEvent: (event: WatchEvent) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const res = await this.send(
      'GET',
      path,
      { query: { ...query, watch: true }, ...(signal ? { signal } : {}) },
      'WATCH',
    );
    if (res.statusCode !== 200) throw await errorFrom(res);
    const lines = createInterface({ input: res, crlfDelay: Infinity });
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      const fail = (err: unknown): void => {
        if (failed) return;
        failed = true;
        reject(err instanceof Error ? err : new Error(String(err)));
        lines.close();
        res.destroy();
      };
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
        if (!failed) resolve();
      });
    });
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    const res = await this.send(method, path, options, method);
    const text = await readBody(res);
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

  private async send(method: string, path: string, options: RequestOptions, verb: string): Promise<IncomingMessage> {
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
      const req = transport(
        url,
        { method, headers, agent: this.agent, ...(options.signal ? { signal: options.signal } : {}) },
        (res) => {
          this.observe(verb, res.statusCode ?? 0);
          resolve(res);
        },
      );
      req.on('error', (err) => {
        this.observe(verb, 0);
        reject(new KubeApiError(0, 'Unreachable', `${method} ${url.pathname}: ${errorText(err)}`, err));
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
