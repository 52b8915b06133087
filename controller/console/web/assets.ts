import { readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { ASSET_BASE } from './page.ts';
import { sendAsset } from './headers.ts';

const read = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url), 'utf8');

/** The console's static files, read once at start: no build step, nothing from another origin. */
const ASSETS: ReadonlyMap<string, { type: string; text: string }> = new Map([
  [`${ASSET_BASE}console.css`, { type: 'text/css; charset=utf-8', text: read('console.css') }],
  [`${ASSET_BASE}console.js`, { type: 'text/javascript; charset=utf-8', text: read('console.js') }],
]);

/** Answers a static file of the console (true), or leaves the path to the caller (false). */
export function serveAsset(res: ServerResponse, path: string): boolean {
  const asset = ASSETS.get(path);
  if (!asset) return false;
  sendAsset(res, asset.type, asset.text);
  return true;
}
