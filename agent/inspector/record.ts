/** One request through a share, as the inspector keeps it (agent/inspector/store.ts). */
export interface RecordedExchange {
  readonly id: number;
  readonly share: string;
  /** Epoch milliseconds when the request arrived. */
  readonly at: number;
  readonly method: string;
  /** Path and query as the backend saw them (a web share's secret prefix removed). */
  readonly path: string;
  /** The response status; 0 when the backend gave none (unreachable, cut off). */
  status: number;
  durationMs: number;
  /** The visitor's identity from the `svc-auth-*` headers the frontend set, when signed in. */
  readonly identity?: { readonly email?: string; readonly provider?: string };
  readonly requestHeaders: [string, string][];
  responseHeaders: [string, string][];
  requestBody: CapturedBody;
  responseBody: CapturedBody;
  /** Bytes this record holds, counted against the inspector's memory bound. */
  bytes: number;
}

/** A body as recorded: its size, the first `limit` bytes, and whether those are shown as text. */
export interface CapturedBody {
  readonly size: number;
  readonly kept: Buffer;
  readonly truncated: boolean;
  readonly text: boolean;
}

export const EMPTY_BODY: CapturedBody = { size: 0, kept: Buffer.alloc(0), truncated: false, text: true };

/** What the inspector keeps in place of a secret. */
export const REDACTED = '[redacted by svc]';

/** Request headers whose whole value is a credential: never recorded. */
const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'x-token']);

/**
 * A header list with svc's secrets replaced (docs/security.md, "Request inspector"): the value of
 * Authorization, Proxy-Authorization and X-TOKEN, and in Cookie and Set-Cookie every cookie whose
 * name starts with the frontend's cookie name (svc's session and login cookies; the frontend strips
 * them before the backend, so this holds even if that ever changed). Other cookies are the
 * backend's own, shown as they are.
 */
export function redactHeaders(raw: readonly string[], ownCookie: string | undefined): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    const value = raw[i + 1] as string;
    if (SECRET_HEADERS.has(name)) out.push([name, REDACTED]);
    else if (name === 'cookie' && ownCookie) out.push([name, redactCookies(value, ownCookie)]);
    else if (name === 'set-cookie' && ownCookie && isOwnCookie(value, ownCookie)) out.push([name, REDACTED]);
    else out.push([name, value]);
  }
  return out;
}

function redactCookies(header: string, ownCookie: string): string {
  return header
    .split(';')
    .map((pair) => (isOwnCookie(pair, ownCookie) ? `${pair.split('=')[0]?.trim()}=${REDACTED}` : pair.trim()))
    .join('; ');
}

/** Whether a `name=value…` text names one of svc's cookies (any case, quotes or `__Host-` prefix). */
function isOwnCookie(pair: string, ownCookie: string): boolean {
  const name = pair
    .split('=')[0]
    ?.trim()
    .replace(/^"|"$/g, '')
    .replace(/^__(secure|host)-/i, '')
    .toLowerCase();
  return name !== undefined && name.startsWith(ownCookie.toLowerCase());
}

/** The visitor's identity from the `svc-auth-*` headers set by the OAuth frontend. */
export function identityOf(headers: readonly [string, string][]): RecordedExchange['identity'] {
  const get = (n: string) => headers.find(([name]) => name === n)?.[1];
  const email = get('svc-auth-email');
  const provider = get('svc-auth-provider');
  if (!email && !provider) return undefined;
  return { ...(email ? { email } : {}), ...(provider ? { provider } : {}) };
}

const TEXT_TYPE = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded|[\w.+-]+\+(json|xml)))/i;

/**
 * Collects the first `limit` bytes of a body as it streams by (the stream itself is untouched; its
 * chunks are held only until the body ends), counting the rest. Text when the content type says so and the body is not content-encoded.
 */
export class BodyCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private size = 0;
  private readonly limit: number;

  constructor(limit: number) {
    this.limit = limit;
  }

  add(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.kept >= this.limit) return;
    const part = chunk.length <= this.limit - this.kept ? chunk : chunk.subarray(0, this.limit - this.kept);
    this.chunks.push(part);
    this.kept += part.length;
  }

  finish(headers: readonly [string, string][]): CapturedBody {
    const type = headers.find(([n]) => n === 'content-type')?.[1] ?? '';
    const encoded = headers.some(([n, v]) => n === 'content-encoding' && v !== 'identity');
    const text = this.size === 0 || (!encoded && TEXT_TYPE.test(type));
    // A buffer of its own, exactly the kept size: a small one from Node's pool would keep its 8 KiB
    // slab alive for as long as the record lives, outside the inspector's byte bound.
    const kept = Buffer.allocUnsafeSlow(this.kept);
    let at = 0;
    for (const chunk of this.chunks) at += chunk.copy(kept, at);
    this.chunks.length = 0;
    return { size: this.size, kept, truncated: this.size > this.kept, text };
  }
}
