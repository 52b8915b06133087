import { createReadStream, statSync, type Stats } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, sep } from 'node:path';
import { badInput, errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { directoryListing } from './listing.ts';
import { contentType } from './mime.ts';
import type { BackendHandler } from './types.ts';

export interface WebBackendOptions {
  /** Absolute path of the shared folder. */
  readonly root: string;
  /** Serve an HTML index of folders without index.html. Off by default. */
  readonly listing?: boolean;
  /**
   * A secret first path segment every request must carry (and that is removed before serving). The
   * single-machine service gives each web share one, so its loopback listener cannot be used by
   * other local users to skip the frontend's login: only the frontend and accesses know the URL.
   */
  readonly pathSecret?: string;
  readonly logger: Logger;
}

/** Checks that a `web` share's folder exists; a clear error naming the path otherwise. */
export function assertDirectory(path: string): void {
  let st: Stats;
  try {
    st = statSync(path);
  } catch (err) {
    throw badInput(`folder ${path} does not exist or cannot be read (${errorText(err)})`, 'folder_not_found');
  }
  if (!st.isDirectory()) throw badInput(`${path} is not a folder`, 'folder_not_found');
}

/**
 * The `web` share backend: static files from one folder, GET and HEAD only. The request path is
 * decoded exactly once, segment by segment; a segment that decodes to `.`/`..`, or holds a slash,
 * backslash or NUL, is refused, so `../`, `%2e%2e%2f`, `..%2f` and `..\` never leave the folder, and
 * `%252e` stays the literal name `%2e`. The resolved real path (symlinks followed) must still lie
 * inside the folder's real path. Hidden files (a segment starting with `.`, except `.well-known`) are
 * not served. Directory listing is opt-in.
 */
export function webBackend(options: WebBackendOptions): BackendHandler {
  return {
    request(req, res) {
      serve(req, res, options).catch((err: unknown) => {
        options.logger.warn({ err: errorText(err) }, 'web backend failed to serve a file');
        if (!res.headersSent) sendText(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    },
    close() {},
  };
}

async function serve(req: IncomingMessage, res: ServerResponse, options: WebBackendOptions): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.setHeader('allow', 'GET, HEAD');
    return sendText(res, 405, 'Method Not Allowed');
  }
  let rawUrl = req.url ?? '/';
  if (options.pathSecret !== undefined) {
    const prefix = `/${options.pathSecret}/`;
    if (!rawUrl.startsWith(prefix)) return sendText(res, 404, 'Not Found');
    rawUrl = rawUrl.slice(prefix.length - 1);
  }
  const q = rawUrl.indexOf('?');
  const rawPath = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const segments = decodeSegments(rawPath);
  if (!segments) return sendText(res, 400, 'Bad Request');
  if (segments.some((s) => s.startsWith('.') && s !== '.well-known')) return sendText(res, 404, 'Not Found');
  // Resolved per request: a folder that is gone (or replaced) answers 404 until it is back.
  const root = await realpath(options.root).catch(() => undefined);
  if (root === undefined) return sendText(res, 404, 'Not Found');
  const resolved = await resolveInside(root, join(root, ...segments));
  if (!resolved) return sendText(res, 404, 'Not Found');
  const st = await stat(resolved);
  if (st.isDirectory()) {
    if (!rawPath.endsWith('/')) {
      const last = rawPath.slice(rawPath.lastIndexOf('/') + 1);
      res.setHeader('location', `./${last}/${q === -1 ? '' : rawUrl.slice(q)}`);
      return sendText(res, 301, 'Moved Permanently');
    }
    const index = await resolveInside(root, join(resolved, 'index.html'));
    const indexStat = index ? await stat(index) : undefined;
    if (index && indexStat?.isFile()) return sendFile(req, res, index, indexStat);
    if (options.listing) return directoryListing(req, res, resolved, rawPath, (path) => resolveInside(root, path));
    return sendText(res, 404, 'Not Found');
  }
  if (!st.isFile()) return sendText(res, 404, 'Not Found');
  return sendFile(req, res, resolved, st);
}

/** Splits and decodes a request path; undefined when any segment is unsafe or undecodable. */
export function decodeSegments(rawPath: string): string[] | undefined {
  if (!rawPath.startsWith('/') || rawPath.includes('\\')) return undefined;
  const out: string[] = [];
  for (const raw of rawPath.split('/')) {
    if (raw === '') continue;
    let segment: string;
    try {
      segment = decodeURIComponent(raw);
    } catch {
      return undefined;
    }
    if (segment === '.' || segment === '..' || /[/\\\0]/.test(segment)) return undefined;
    out.push(segment);
  }
  return out;
}

/** The real path of `candidate` when it exists and stays inside `root` (itself a real path). */
async function resolveInside(root: string, candidate: string): Promise<string | undefined> {
  let real: string;
  try {
    real = await realpath(candidate);
  } catch {
    return undefined;
  }
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep) ? real : undefined;
}

function sendFile(req: IncomingMessage, res: ServerResponse, path: string, st: Stats): void {
  const etag = `W/"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
  res.setHeader('etag', etag);
  res.setHeader('last-modified', st.mtime.toUTCString());
  res.setHeader('x-content-type-options', 'nosniff');
  if (req.headers['if-none-match'] === etag) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('content-type', contentType(path));
  res.setHeader('content-length', st.size);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(path);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'text/plain; charset=utf-8');
  res.setHeader('x-content-type-options', 'nosniff');
  res.end(`${status} ${text}\n`);
}
