/**
 * The console's stand-in for the shared web kit (lib/web): the same names and behaviour, kept in
 * this folder until the kit lands, so folding it in is a change of import paths.
 *
 * HTML built by a tagged template that escapes every interpolated value unless it is already
 * {@link Html} (another `html` template or {@link trusted}): an account's email, a share's target or
 * an error message can never become markup.
 */
export class Html {
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }

  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` with `& < > " '` replaced by entities: safe between tags and inside quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
}

/** The tagged template: `html\`<td>${share.token}</td>\`` escapes the token. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** Markup the caller vouches for (constant markup only, never input). */
export function trusted(markup: string): Html {
  return new Html(markup);
}

/** An http(s) URL fit for an `href`; anything else (`javascript:`, `data:`) becomes `#`. */
export function safeHref(url: string): string {
  if (/^\/(?!\/)/.test(url)) return url;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : '#';
  } catch {
    return '#';
  }
}
