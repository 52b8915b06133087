import { browse, type CookieJar, type Reply } from './http.ts';

export interface DevLoginOptions {
  /** A protected URL: visiting it must redirect to the provider's login. */
  readonly start: URL;
  readonly jar: CookieJar;
  /** Address every host is reached at (default 127.0.0.1); the Host header keeps the name. */
  readonly connectTo?: string;
  readonly login: string;
  readonly password?: string;
}

/**
 * Performs a real browser-style login through an OpenID Connect relying party whose provider is
 * oidc-provider with `devInteractions` (its built-in development form: any login, any password):
 * GET the protected URL → provider authorize → interaction page → POST the form (`login`,
 * `password` and its hidden fields) → redirects back through the relying party's callback to the
 * protected URL. Consent pages, if any, are submitted as shown. Returns the final reply; the jar
 * holds the relying party's session cookie afterwards.
 */
export async function devInteractionsLogin(options: DevLoginOptions): Promise<{ url: URL; reply: Reply }> {
  const connect = options.connectTo ? { connectTo: options.connectTo } : {};
  let { url, reply } = await browse(options.jar, options.start, connect);
  for (let step = 0; step < 3; step += 1) {
    const form = parseForm(reply.body);
    if (!form) return { url, reply };
    const fields = new URLSearchParams(form.hidden);
    if (form.names.includes('login')) fields.set('login', options.login);
    if (form.names.includes('password')) fields.set('password', options.password ?? 'benchmark');
    ({ url, reply } = await browse(options.jar, new URL(form.action, url), {
      ...connect,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    }));
  }
  throw new Error(`login at ${options.start.origin} did not finish after 3 forms (last status ${reply.status})`);
}

interface Form {
  readonly action: string;
  readonly hidden: [string, string][];
  readonly names: string[];
}

/** The first POST form of an HTML page: its action, hidden fields and input names. */
function parseForm(html: string): Form | undefined {
  const form = /<form\b[^>]*\baction="([^"]*)"[^>]*\bmethod="post"[^>]*>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) return undefined;
  const hidden: [string, string][] = [];
  const names: string[] = [];
  for (const input of (form[2] ?? '').matchAll(/<input\b[^>]*>/gi)) {
    const tag = input[0];
    const name = /\bname="([^"]*)"/i.exec(tag)?.[1];
    if (!name) continue;
    names.push(name);
    if (/\btype="hidden"/i.test(tag)) hidden.push([name, decodeEntities(/\bvalue="([^"]*)"/i.exec(tag)?.[1] ?? '')]);
  }
  return { action: decodeEntities(form[1] ?? ''), hidden, names };
}

function decodeEntities(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}
