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
 * Collects the first `limit` bytes of a body as it streams by, copying them as they pass (the
 * stream's own chunks are never held, so a large chunk is not kept alive by a small slice of it),
 * and counts the rest. Text when the content type says so and the body is not content-encoded.
 */
/** Bytes recordings in progress may hold together, shared by every capture of an inspector. */
export interface CaptureBudget {
  /** Takes up to `wanted` bytes; returns how many were granted (0 when the budget is spent). */
  reserve(wanted: number): number;
  /** Gives back bytes taken with `reserve`. */
  release(bytes: number): void;
}

export class BodyCapture {
  private kept: Buffer | undefined;
  private length = 0;
  private size = 0;
  private limit: number;
  private readonly budget: CaptureBudget | undefined;

  constructor(limit: number, budget?: CaptureBudget) {
    this.limit = limit;
    this.budget = budget;
  }

  add(chunk: Buffer): void {
    this.size += chunk.length;
    const room = this.limit - this.length;
    if (room <= 0 || chunk.length === 0) return;
    let part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    if (!this.kept || this.kept.length - this.length < part.length) this.grow(part.length);
    const space = (this.kept?.length ?? 0) - this.length;
    if (space < part.length) part = part.subarray(0, space);
    if (part.length > 0) this.length += part.copy(this.kept as Buffer, this.length);
  }

  finish(headers: readonly [string, string][]): CapturedBody {
    const type = headers.find(([n]) => n === 'content-type')?.[1] ?? '';
    const encoded = headers.some(([n, v]) => n === 'content-encoding' && v !== 'identity');
    const text = this.size === 0 || (!encoded && TEXT_TYPE.test(type));
    // A buffer of its own, exactly the kept size: a small one from Node's pool would keep its 8 KiB
    // slab alive for as long as the record lives, outside the inspector's byte bound.
    const kept = this.kept && this.kept.length === this.length ? this.kept : exact(this.kept, this.length);
    // From here the record's own size is counted by the store.
    this.budget?.release(this.kept?.length ?? 0);
    this.kept = undefined;
    return { size: this.size, kept, truncated: this.size > this.length, text };
  }

  /**
   * Room for `more` bytes, doubling up to the limit (a body in one chunk is copied once), as far as
   * the shared budget grants: when it is spent, the body is kept only as far as it got.
   */
  private grow(more: number): void {
    const had = this.kept?.length ?? 0;
    let size = Math.min(this.limit, Math.max(this.length + more, 2 * had));
    if (this.budget) {
      size = had + this.budget.reserve(size - had);
      if (size === had) {
        this.limit = this.length;
        return;
      }
    }
    const next = Buffer.allocUnsafeSlow(size);
    this.kept?.copy(next, 0, 0, this.length);
    this.kept = next;
  }
}

function exact(from: Buffer | undefined, length: number): Buffer {
  const out = Buffer.allocUnsafeSlow(length);
  from?.copy(out, 0, 0, length);
  return out;
}
