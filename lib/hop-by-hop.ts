/**
 * The hop-by-hop rule (RFC 9110 §7.6.1), one for every path that relays HTTP/1.1 messages: the
 * frontend's Node path (lib/http-pipe.ts, lib/upgrade-pipe.ts), its fast path
 * (lib/fast-upstream/response-framer.ts), the request headers it prepares for every path
 * (sidecar/proxy.ts) and the tunnel (lib/tunnel/protocol.ts). A relay removes the headers that
 * belong to one connection, and every header the sender names in its own `Connection` header:
 * `Connection: x-cache-key` from a backend, or from a visitor, never reaches the other side with
 * `x-cache-key` in it.
 */

/** Headers that always describe one connection (the fixed list; `Connection` can name more). */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Names a `Connection` header may list that a relay still keeps: the message's framing (the relay
 * that frames the body owns these; dropping Content-Length from a relayed head would let the next
 * message run into this one's body), and Host, which every hop sets itself.
 */
const NEVER_LISTED = new Set(['content-length', 'transfer-encoding', 'host']);

const NONE: readonly string[] = [];

/**
 * The header names (lower-case) a `Connection` value lists for removal, besides the fixed
 * hop-by-hop ones and the connection options `close` and `keep-alive`; empty for the common values,
 * which are recognised without splitting.
 */
export function connectionListed(value: string | readonly string[] | undefined): readonly string[] {
  if (value === undefined) return NONE;
  const joined = typeof value === 'string' ? value : value.join(',');
  // `keep-alive`, `close`, `Upgrade` and the like: one token that names no further header.
  if (joined.length <= 17 && !joined.includes(',') && HOP_BY_HOP_OR_OPTION.has(joined.trim().toLowerCase()))
    return NONE;
  let listed: string[] | undefined;
  for (const token of joined.split(',')) {
    const name = token.trim().toLowerCase();
    if (name === '' || HOP_BY_HOP_OR_OPTION.has(name) || NEVER_LISTED.has(name)) continue;
    (listed ??= []).push(name);
  }
  return listed ?? NONE;
}

const HOP_BY_HOP_OR_OPTION: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'close']);

/**
 * The `Connection` value to pass on with a message whose listed headers were removed: only the
 * connection options (`upgrade`, `close`, `keep-alive`), which mean the same to the next hop; the
 * names of headers this hop removed mean nothing there, and would make it remove a header of the
 * same name the relay added (an identity or forwarding header). Undefined when nothing is left.
 */
export function forwardedConnection(value: string): string | undefined {
  const lower = value.toLowerCase();
  if (lower === 'keep-alive' || lower === 'close' || lower === 'upgrade') return value;
  const kept = value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => {
      const name = t.toLowerCase();
      return name === 'upgrade' || name === 'close' || name === 'keep-alive';
    });
  return kept.length > 0 ? kept.join(', ') : undefined;
}

/** Removes from a flat [name, value, …] list the headers a Connection header named (lower-case `listed`). */
export function withoutListed(headers: string[], listed: readonly string[]): void {
  let to = 0;
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i] as string;
    if (listed.includes(name.toLowerCase())) continue;
    headers[to] = name;
    headers[to + 1] = headers[i + 1] as string;
    to += 2;
  }
  headers.length = to;
}
