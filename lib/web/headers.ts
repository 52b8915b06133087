import type { ServerResponse } from 'node:http';
import type { Html } from './html.ts';

/**
 * The Content-Security-Policy of every page svc serves (docs/security.md, "Web pages"): scripts,
 * styles and fetches only from the page's own origin, no inline script or style, no plug-ins, no
 * framing, forms post only back to the origin, no `<base>`.
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

/** Headers every web answer carries: the CSP, no sniffing, no referrer, no framing, no caching. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  'cache-control': 'no-store',
};

/** Answers with `body` as text/html and the security headers. */
export function sendHtml(res: ServerResponse, status: number, body: Html, extra: Record<string, string> = {}): void {
  send(res, status, 'text/html; charset=utf-8', body.text, extra);
}

/** Answers with `payload` as JSON and the security headers. */
export function sendJson(
  res: ServerResponse,
  status: number,
  payload: unknown,
  extra: Record<string, string> = {},
): void {
  send(res, status, 'application/json', JSON.stringify(payload), extra);
}

/** Answers with plain text (refusals) and the security headers. */
export function sendText(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  send(res, status, 'text/plain; charset=utf-8', `${text}\n`, extra);
}

function send(res: ServerResponse, status: number, type: string, text: string, extra: Record<string, string>): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    ...extra,
    'content-type': type,
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
