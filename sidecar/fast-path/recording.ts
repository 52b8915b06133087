import type { ExchangeObserver, ExchangeRecorder } from '../../lib/exchange-observer.ts';
import { webRequestHeaders, type BackendHeaders } from '../../lib/http-pipe.ts';
import { matchesAt, trimOws } from './head-text.ts';
import type { FastRoute } from './fast-path.ts';
import type { FastRequest } from './request-head.ts';
import type { FramerTap } from './response-framer.ts';

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

const STATUS_LINE_END = /[^\r\n]*(?:\r\n|$)/y;
const HEADER_LINE = /[^:\r\n]+:[^\r\n]*(?:\r\n|$)/y;

/**
 * A response head's header lines (the framer has checked their syntax) as Node's `rawHeaders`
 * gives them: `[name, value, …]`, names as sent, values without surrounding whitespace.
 */
export function rawHeaders(text: string): string[] {
  const out: string[] = [];
  if (!matchesAt(STATUS_LINE_END, text, 0)) return out;
  let at = STATUS_LINE_END.lastIndex;
  while (at < text.length && matchesAt(HEADER_LINE, text, at)) {
    const colon = text.indexOf(':', at);
    const next = HEADER_LINE.lastIndex;
    out.push(text.slice(at, colon), trimOws(text, colon + 1, text.charCodeAt(next - 1) === 10 ? next - 2 : next));
    at = next;
  }
  return out;
}
