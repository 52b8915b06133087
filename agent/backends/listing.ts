import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * An HTML index of one folder (opt-in `--web-listing`); hidden entries are left out, names escaped.
 * `inside` gives an entry's real path when it stays inside the shared folder: symlinks that lead
 * out of it (or nowhere) are not listed, since following them answers 404 anyway and their names
 * would tell a visitor about the rest of the machine.
 */
export async function directoryListing(
  req: IncomingMessage,
  res: ServerResponse,
  dir: string,
  rawPath: string,
  inside: (path: string) => Promise<string | undefined>,
): Promise<void> {
  const entries: { name: string; isDirectory: boolean }[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    if (!e.isSymbolicLink()) {
      entries.push({ name: e.name, isDirectory: e.isDirectory() });
      continue;
    }
    const real = await inside(join(dir, e.name));
    if (real !== undefined) entries.push({ name: e.name, isDirectory: (await stat(real)).isDirectory() });
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  const items = entries
    .map((e) => {
      const name = e.isDirectory ? `${e.name}/` : e.name;
      return `<li><a href="./${escapeHtml(encodeURIComponent(e.name))}${e.isDirectory ? '/' : ''}">${escapeHtml(name)}</a></li>`;
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
