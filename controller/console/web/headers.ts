import type { ServerResponse } from 'node:http';
import type { Html } from './html.ts';

/**
 * The console's Content-Security-Policy: script, style and event streams only from its own origin,
 * no inline script or style, forms post only back to it, no framing, no `<base>`.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Headers every console answer carries. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it Chromium sends `Origin: null` on the console's own form posts, which
  // the same-origin check (guard.ts) must then refuse. same-origin keeps the path off other sites.
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** Extra response headers: Set-Cookie may repeat. */
export type ExtraHeaders = Record<string, string | string[]>;

/** Answers `body` as text/html with the security headers. */
export function sendHtml(res: ServerResponse, status: number, body: Html, extra: ExtraHeaders = {}): void {
  send(res, status, 'text/html; charset=utf-8', body.text, extra);
}

/** Answers plain text (refusals before any page) with the security headers. */
export function sendText(res: ServerResponse, status: number, text: string, extra: ExtraHeaders = {}): void {
  send(res, status, 'text/plain; charset=utf-8', `${text}\n`, extra);
}

/** A 303 to `location` (a path on the console) after a form post or sign-in. */
export function seeOther(res: ServerResponse, location: string, extra: ExtraHeaders = {}): void {
  res.writeHead(303, { ...SECURITY_HEADERS, ...extra, location, 'content-length': 0 });
  res.end();
}

/** Answers a static asset with a long-lived but revalidated cache entry. */
export function sendAsset(res: ServerResponse, type: string, text: string): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'cache-control': 'no-cache',
    'content-type': type,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function send(res: ServerResponse, status: number, type: string, text: string, extra: ExtraHeaders): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    ...extra,
    'content-type': type,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
