import type { ExchangeObserver, ExchangeRecorder } from '../../lib/exchange-observer.ts';
import { BodyCapture, EMPTY_BODY, identityOf, redactHeaders, type RecordedExchange } from './record.ts';
import type { InspectorStore } from './store.ts';

/**
 * The inspector's recorder of one share, called on the paths that send its requests to the backend
 * (the frontend's backend pipe, lib/http-pipe.ts; the tunnel's agent side, agent/tunnel/serve-stream.ts;
 * private accesses, agent/backends/proxy.ts). Each request's head, its response's head and the
 * first `bodyBytes` of both bodies are copied as they pass (redacted: record.ts), nothing beyond;
 * the record is kept when the exchange ends (with status 0 when the backend gave no answer).
 */
export function shareRecorder(share: string, store: InspectorStore, ownCookie: string | undefined): ExchangeRecorder {
  return (method, path, headers) => new Recording(share, store, ownCookie, method, path, headers);
}

class Recording implements ExchangeObserver {
  private readonly record: RecordedExchange;
  private readonly t0 = performance.now();
  private readonly requestCapture: BodyCapture;
  private readonly responseCapture: BodyCapture;
  private readonly store: InspectorStore;
  private readonly ownCookie: string | undefined;
  private ended = false;

  constructor(
    share: string,
    store: InspectorStore,
    ownCookie: string | undefined,
    method: string,
    path: string,
    headers: readonly string[],
  ) {
    this.store = store;
    this.ownCookie = ownCookie;
    this.requestCapture = new BodyCapture(store.limits.bodyBytes, store);
    this.responseCapture = new BodyCapture(store.limits.bodyBytes, store);
    const requestHeaders = redactHeaders(headers, ownCookie);
    const identity = identityOf(requestHeaders);
    this.record = {
      id: store.newId(),
      share,
      at: Date.now(),
      method,
      path,
      status: 0,
      durationMs: 0,
      ...(identity ? { identity } : {}),
      requestHeaders,
      responseHeaders: [],
      requestBody: EMPTY_BODY,
      responseBody: EMPTY_BODY,
      bytes: 0,
    };
  }

  requestBody(chunk: Buffer): void {
    this.requestCapture.add(chunk);
  }

  response(status: number, rawHeaders: readonly string[]): void {
    this.record.status = status;
    this.record.responseHeaders = redactHeaders(rawHeaders, this.ownCookie);
  }

  responseBody(chunk: Buffer): void {
    this.responseCapture.add(chunk);
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    const r = this.record;
    r.durationMs = Math.round((performance.now() - this.t0) * 10) / 10;
    r.requestBody = this.requestCapture.finish(r.requestHeaders);
    r.responseBody = this.responseCapture.finish(r.responseHeaders);
    this.store.add(r);
  }
}
