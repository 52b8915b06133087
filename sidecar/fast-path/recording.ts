import type { ExchangeObserver, ExchangeRecorder } from '../../lib/exchange-observer.ts';
import { webRequestHeaders, type BackendHeaders } from '../../lib/http-pipe.ts';
import { rawHeaders } from '../../lib/fast-upstream/raw-headers.ts';
import type { FramerTap } from '../../lib/fast-upstream/response-framer.ts';
import type { FastRoute } from './fast-path.ts';
import type { FastRequest } from './request-head.ts';

/**
 * A share's request recorded on the fast path (the agent's request inspector): the recorder is
 * shown what the backend pipe (lib/http-pipe.ts) shows it for the same request — the method, the
 * visitor's path, the headers the backend gets (Host first, no hop-by-hop ones), the backend's
 * response head as it sent it and its body without the chunked framing — read from the head the
 * fast path parsed and the bytes its framer relays, with no HTTP objects built. The observer copies
 * what it keeps (nothing of a body when its limit is 0).
 */
export class FastRecording implements FramerTap {
  private readonly observer: ExchangeObserver;
  private ended = false;

  constructor(recorder: ExchangeRecorder, request: FastRequest, host: string, headers: BackendHeaders) {
    this.observer = recorder(request.method, request.url, webRequestHeaders(headers, host));
  }

  head(status: number, text: string): void {
    this.observer.response(status, rawHeaders(text));
  }

  body(data: Buffer): void {
    this.observer.responseBody(data);
  }

  /** The exchange is over (complete, failed or abandoned); later calls do nothing. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.observer.end();
  }
}

/** The recording of a request the fast path takes, when its share has a recorder. */
export function startRecording(request: FastRequest, route: FastRoute): FastRecording | undefined {
  // A tunnelled share (no URL) is recorded by its agent.
  if (!route.recorder || !(route.target instanceof URL)) return undefined;
  return new FastRecording(route.recorder, request, route.target.host, route.headers);
}
