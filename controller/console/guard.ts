import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * Which `Host` headers the console answers: the public URL's host, and on a loopback listener only
 * loopback names with the bound port. A page on another site that makes its own name resolve to
 * 127.0.0.1 (DNS rebinding) sends its own name as Host and is refused before any cookie is read.
 */
export function hostGuard(options: {
  publicUrl?: URL;
  listenHost: string;
  port: () => number;
}): (req: IncomingMessage) => boolean {
  const loopback = isLoopback(options.listenHost);
  return (req) => {
    const host = req.headers.host?.toLowerCase();
    if (!host) return false;
    if (options.publicUrl && host === options.publicUrl.host) return true;
    if (!loopback) return !options.publicUrl;
    const port = String(options.port());
    const names = ['127.0.0.1', 'localhost', '[::1]'];
    return names.some((n) => host === `${n}:${port}`) || (host.endsWith(`.localhost:${port}`) && !host.includes('['));
  };
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * Whether a state-changing request comes from the console's own pages: a browser's `Origin` (and
 * `Sec-Fetch-Site`, when sent) must say same origin. The CSRF field is checked on top of this.
 */
export function sameOrigin(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host?.toLowerCase();
  } catch {
    return false;
  }
}
