import type { ServerResponse } from 'node:http';
import type { Html } from '../../lib/web/html.ts';
import { SECURITY_HEADERS, sendHtml, sendText } from '../../lib/web/headers.ts';

/**
 * The kit's headers with one change: `Referrer-Policy: same-origin`. Under the kit's `no-referrer`
 * Chromium sends `Origin: null` with a form posted without script, and the console's forms work
 * without script; same-origin still keeps every console URL from other sites.
 */
const CONSOLE_HEADERS = { 'referrer-policy': 'same-origin' };

/** A console page; `cookies` become Set-Cookie headers. */
export function sendPage(res: ServerResponse, status: number, body: Html, cookies: readonly string[] = []): void {
  if (cookies.length > 0) res.setHeader('set-cookie', [...cookies]);
  sendHtml(res, status, body, CONSOLE_HEADERS);
}

/** A plain-text refusal (before any page applies). */
export function refuse(res: ServerResponse, status: number, text: string): void {
  sendText(res, status, text, CONSOLE_HEADERS);
}

/** A 303 to `location` after a form post or sign-in; `cookies` become Set-Cookie headers. */
export function seeOther(res: ServerResponse, location: string, cookies: readonly string[] = []): void {
  if (cookies.length > 0) res.setHeader('set-cookie', [...cookies]);
  res.writeHead(303, { ...SECURITY_HEADERS, ...CONSOLE_HEADERS, location, 'content-length': 0 });
  res.end();
}
