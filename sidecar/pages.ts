import type { ServerResponse } from 'node:http';

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
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}p{line-height:1.5}code{background:#f3f3f3;padding:0 .2rem}</style>
</head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><small>HTTP ${status}</small></p></body></html>
`;
  res.writeHead(status, {
    ...extraHeaders,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

export function redirect(
  res: ServerResponse,
  location: URL,
  extraHeaders: Record<string, string | string[]> = {},
): void {
  res.writeHead(302, { ...extraHeaders, location: location.href, 'cache-control': 'no-store', 'content-length': 0 });
  res.end();
}
