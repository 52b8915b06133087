import type { ServerResponse } from 'node:http';
import { STATUS_CODES } from '../lib/node-http.ts';

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c] as string);
}

/**
 * Sends a small self-contained HTML page. Everything interpolated is escaped; the page loads no
 * external resources and forbids framing and scripts.
 */
export function sendPage(
  res: ServerResponse,
  status: number,
  title: string,
  message: string,
  extraHeaders: Record<string, string | string[]> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const { headers, body } = pageResponse({ status, title, message }, extraHeaders);
  res.writeHead(status, headers);
  res.end(body);
}

/** A page's headers and body, as `sendPage` hands them to Node's server. */
export function pageResponse(
  page: Page,
  extraHeaders: Record<string, string | string[]> = {},
): { headers: Record<string, string | string[] | number>; body: string } {
  const body = pageBody(page.status, page.title, page.message);
  return { headers: { ...extraHeaders, ...PAGE_HEADERS, 'content-length': Buffer.byteLength(body) }, body };
}

/** A page as `sendPage` and `rawPage` write it. */
export interface Page {
  readonly status: number;
  readonly title: string;
  readonly message: string;
}

/** What a visitor sees when a share's backend fails, on either of the frontend's paths. */
export const BACKEND_PAGES = {
  unreachable: {
    status: 502,
    title: 'Backend unreachable',
    message: 'The service behind this share is not answering. Try again later.',
  },
  refused: {
    status: 502,
    title: 'Bad gateway',
    message: 'The service behind this share sent a response the frontend cannot pass on.',
  },
  timeout: {
    status: 504,
    title: 'Backend timeout',
    message: 'The service behind this share did not answer in time. Try again later.',
  },
} as const satisfies Record<string, Page>;

/** What a visitor of a tunnelled share sees when its agent cannot answer, on either of the frontend's paths. */
export const TUNNEL_PAGES = {
  offline: {
    status: 503,
    title: 'Share offline',
    message:
      'The machine that publishes this share is not connected right now. The share is not deleted: try again in a moment.',
  },
  busy: {
    status: 503,
    title: 'Share busy',
    message: 'This share is handling too many requests at once. Try again in a moment.',
  },
  unreachable: {
    status: 502,
    title: 'Backend unreachable',
    message: 'The service behind this share is not answering. Try again later.',
  },
  timeout: { status: 504, title: 'Backend timeout', message: 'The service behind this share did not answer in time.' },
} as const satisfies Record<string, Page>;

/** Headers of a tunnel page: a 503 asks the visitor to come back in a few seconds. */
export function tunnelPageHeaders(page: Page): Record<string, string> {
  return page.status === 503 ? { 'retry-after': '5' } : {};
}

/** Every page's headers but its length: no caching, nothing loaded, no framing, no sniffing. */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
} as const;

function pageBody(status: number, title: string, message: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}p{line-height:1.5}code{background:#f3f3f3;padding:0 .2rem}</style>
</head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><small>HTTP ${status}</small></p></body></html>
`;
}

/**
 * `sendPage`'s page as the bytes of a whole HTTP/1.1 response, for the fast path (which writes to
 * the socket itself); `close` adds `connection: close` when the connection ends after it.
 */
/** A page as raw response bytes; the answer to a HEAD (`headOnly`) keeps the length and drops the body. */
export function rawPage(page: Page, close: boolean, headOnly = false): Buffer {
  const { status, title, message } = page;
  const body = pageBody(status, title, message);
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (const [name, value] of Object.entries(PAGE_HEADERS)) head += `${name}: ${value}\r\n`;
  head += `content-length: ${Buffer.byteLength(body)}\r\n${close ? 'connection: close\r\n' : ''}\r\n`;
  return Buffer.from(headOnly ? head : head + body);
}

export function redirect(
  res: ServerResponse,
  location: URL,
  extraHeaders: Record<string, string | string[]> = {},
): void {
  res.writeHead(302, { ...extraHeaders, location: location.href, 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
}
