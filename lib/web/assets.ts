import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { SECURITY_HEADERS } from './headers.ts';

const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/** The folder of the kit's own assets (kit.css, kit.js). */
export const KIT_ASSETS = join(import.meta.dirname, 'assets');

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

/**
 * The pages' static files (CSS, script modules), read into memory at start from `folders` (the
 * kit's first, then each product's own) and served under `prefix` from the product itself: no CDN,
 * no third-party request. A later folder may not replace an earlier file: names are unique.
 * Served with the security headers and an ETag (revalidated, never stale after an upgrade).
 */
export class StaticAssets {
  private readonly files = new Map<string, Asset>();

  readonly prefix: string;

  constructor(prefix: string, folders: readonly string[] = [KIT_ASSETS]) {
    this.prefix = prefix;
    for (const folder of folders) {
      for (const name of readdirSync(folder)) {
        const type = TYPES[extname(name)];
        if (!type) continue;
        if (this.files.has(name)) throw new Error(`asset ${name} in ${folder} repeats a name already served`);
        const body = readFileSync(join(folder, name));
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
        this.files.set(name, { body, type, etag });
      }
    }
  }

  /** Answers the request when it names an asset (true), or leaves it to the caller (false). */
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (!path.startsWith(this.prefix) || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    const asset = this.files.get(path.slice(this.prefix.length));
    if (!asset) return false;
    const headers = { ...SECURITY_HEADERS, 'cache-control': 'no-cache', etag: asset.etag, 'content-type': asset.type };
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    res.writeHead(200, { ...headers, 'content-length': asset.body.length });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
    return true;
  }
}
