import { readdir } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** An HTML index of one folder (opt-in `--web-listing`); hidden entries are left out, names escaped. */
export async function directoryListing(
  req: IncomingMessage,
  res: ServerResponse,
  dir: string,
  rawPath: string,
): Promise<void> {
  const entries = (await readdir(dir, { withFileTypes: true }))
    .filter((e) => !e.name.startsWith('.'))
    .sort((a, b) => a.name.localeCompare(b.name));
  const items = entries
    .map((e) => {
      const name = e.isDirectory() ? `${e.name}/` : e.name;
      return `<li><a href="./${escapeHtml(encodeURIComponent(e.name))}${e.isDirectory() ? '/' : ''}">${escapeHtml(name)}</a></li>`;
    })
    .join('\n');
  const title = escapeHtml(safeDecode(rawPath));
  const body = `<!doctype html>\n<meta charset="utf-8">\n<title>Index of ${title}</title>\n<h1>Index of ${title}</h1>\n<ul>\n${items}\n</ul>\n`;
  res.statusCode = 200;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('content-security-policy', "default-src 'none'");
  res.end(req.method === 'HEAD' ? undefined : body);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
