import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { createBackendPipe, pushHeader, type BackendHeaders } from '../../lib/http-pipe.ts';
import { listenHandler, type RunningListener } from '../backends/listener.ts';
import { BodyCapture, EMPTY_BODY, identityOf, redactHeaders, type RecordedExchange } from './record.ts';
import type { InspectorStore } from './store.ts';

/** The recorder's own backend timeout: the frontend in front keeps the configured one. */
const NO_TIMEOUT_MS = 24 * 3_600_000;

interface Pending {
  readonly record: RecordedExchange;
  readonly t0: number;
  readonly responseBody: BodyCapture;
}

/** Where a share's traffic goes while the inspector records it, and how to stop recording. */
export interface RecordingFront {
  /** The URL the frontend, the tunnel and accesses send the share's requests to. */
  readonly url: URL;
  close(): Promise<void>;
}

/**
 * Starts the inspector's recording hop of one share: a loopback listener between everything that
 * reaches the share (the frontend, the tunnel, private accesses) and its backend. Each request is
 * passed on unchanged through the backend pipe while its head, its response's head and the first
 * bytes of both bodies are recorded (redacted: record.ts). Its path starts with a per-share secret,
 * so another local user cannot put requests into the inspector. A backend that fails is not
 * answered here: the connection is cut, and the frontend answers the visitor as it would without
 * the inspector.
 */
export async function startRecording(
  share: string,
  target: URL,
  store: InspectorStore,
  ownCookie: string | undefined,
): Promise<RecordingFront> {
  const secret = `/${randomBytes(16).toString('base64url')}`;
  const pending = new WeakMap<IncomingMessage, Pending>();
  const pipe = createBackendPipe({
    backendTimeoutMs: NO_TIMEOUT_MS,
    observeResponse: (req, upstreamRes) => {
      const p = pending.get(req);
      if (!p) return;
      p.record.status = upstreamRes.statusCode ?? 0;
      p.record.responseHeaders = redactHeaders(upstreamRes.rawHeaders, ownCookie);
      upstreamRes.on('data', (chunk: Buffer) => p.responseBody.add(chunk));
    },
  });
  const unprefixed = (req: IncomingMessage): boolean => {
    const url = req.url ?? '/';
    if (url !== secret && !url.startsWith(`${secret}/`) && !url.startsWith(`${secret}?`)) return false;
    req.url = url.slice(secret.length) || '/';
    if (req.url.startsWith('?')) req.url = `/${req.url}`;
    return true;
  };
  const listener: RunningListener = await listenHandler(
    {
      request(req: IncomingMessage, res: ServerResponse) {
        if (!unprefixed(req)) {
          res.writeHead(404).end();
          return;
        }
        const p = begin(share, req, target, store, ownCookie);
        pending.set(req, p);
        res.on('close', () => finish(p, store));
        pipe.web(req, res, target, headersOf(req), () => res.destroy());
      },
      upgrade(req: IncomingMessage, socket: Duplex, head: Buffer) {
        if (!unprefixed(req)) socket.destroy();
        else pipe.ws(req, socket, head, target, headersOf(req));
      },
      close: () => pipe.close(),
    },
    { host: '127.0.0.1', port: 0 },
  );
  return { url: new URL(`http://127.0.0.1:${listener.port}${secret}/`), close: () => listener.close() };
}

/** The record of a request as it arrives; its request body is captured as it streams to the backend. */
function begin(
  share: string,
  req: IncomingMessage,
  target: URL,
  store: InspectorStore,
  ownCookie: string | undefined,
): Pending {
  // The Host the backend gets is the target's (lib/http-pipe.ts), not this hop's.
  const requestHeaders = redactHeaders(req.rawHeaders, ownCookie).map(([name, value]): [string, string] =>
    name === 'host' ? [name, target.host] : [name, value],
  );
  const capture = new BodyCapture(store.limits.bodyBytes);
  const identity = identityOf(requestHeaders);
  const record: RecordedExchange = {
    id: store.newId(),
    share,
    at: Date.now(),
    method: req.method ?? 'GET',
    path: req.url ?? '/',
    status: 0,
    durationMs: 0,
    ...(identity ? { identity } : {}),
    requestHeaders,
    responseHeaders: [],
    requestBody: EMPTY_BODY,
    responseBody: EMPTY_BODY,
    bytes: 0,
  };
  req.on('data', (chunk: Buffer) => capture.add(chunk));
  const p = { record, t0: performance.now(), responseBody: new BodyCapture(store.limits.bodyBytes) };
  req.once('end', () => (record.requestBody = capture.finish(requestHeaders)));
  return p;
}

function finish(p: Pending, store: InspectorStore): void {
  p.record.durationMs = Math.round((performance.now() - p.t0) * 10) / 10;
  p.record.responseBody = p.responseBody.finish(p.record.responseHeaders);
  store.add(p.record);
}

/** The request's headers passed on as they came (the frontend in front already prepared them). */
function headersOf(req: IncomingMessage): BackendHeaders {
  const out: BackendHeaders = [];
  for (const name in req.headers) {
    const value = req.headers[name];
    if (value !== undefined) pushHeader(out, name, value);
  }
  return out;
}
