/**
 * HTML built by a tagged template that escapes every interpolated value unless it is already
 * {@link Html} (the output of another `html` template or of {@link trusted}). Pages are assembled
 * from these, so a share's name, a request path or a header value can never become markup.
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

/**
 * An interpolated value as HTML: Html as is, arrays item by item, `null`/`undefined`/`false` as
 * nothing, anything else escaped as text.
 */
function render(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  if (typeof value === 'object' || typeof value === 'function' || typeof value === 'symbol')
    return escapeHtml(JSON.stringify(value) ?? '');
  return escapeHtml(`${value as string | number | boolean | bigint}`);
}

/** The tagged template: `html\`<td>${share.name}</td>\`` escapes the name. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** Text the caller vouches for as markup (constant markup only, never input). */
export function trusted(markup: string): Html {
  return new Html(markup);
}

/**
 * A URL fit for an `href`: http(s) URLs and same-origin paths pass; anything else (`javascript:`,
 * `data:`, protocol-relative `//host`) becomes `#`, so a share's target cannot run script on click.
 */
export function safeHref(url: string): string {
  if (/^\/(?!\/)/.test(url)) return url;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : '#';
  } catch {
    return '#';
  }
}
