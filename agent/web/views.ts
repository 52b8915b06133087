import type { CapturedBody, RecordedExchange } from '../inspector/record.ts';
import type { ReplayResult } from '../inspector/replay.ts';

/** A recorded request as its list row shows it (the live stream's `request` event). */
export function summary(r: RecordedExchange): Record<string, unknown> {
  return {
    id: r.id,
    at: r.at,
    method: r.method,
    path: r.path,
    status: r.status,
    durationMs: r.durationMs,
    size: r.responseBody.size,
    ...(r.identity ? { identity: r.identity } : {}),
  };
}

/** A recorded request in full: headers, and each body as text or as its size. */
export function detail(r: RecordedExchange): Record<string, unknown> {
  return {
    ...summary(r),
    requestHeaders: r.requestHeaders,
    responseHeaders: r.responseHeaders,
    requestBody: body(r.requestBody),
    responseBody: body(r.responseBody),
  };
}

/** A replay's answer, shaped as a recorded response. */
export function replayView(r: ReplayResult): Record<string, unknown> {
  return {
    status: r.status,
    durationMs: r.durationMs,
    responseHeaders: r.responseHeaders,
    responseBody: body(r.responseBody),
  };
}

/** Text bodies as text (the part kept); binary ones as their size only. */
function body(b: CapturedBody): Record<string, unknown> {
  return {
    size: b.size,
    truncated: b.truncated,
    ...(b.text ? { text: b.kept.toString('utf8') } : { binary: true }),
  };
}
