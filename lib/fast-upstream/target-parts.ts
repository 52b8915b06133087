import { upstreamHost, upstreamPort } from '../http-pipe.ts';

/** What a fast path reads of a share's `http://` target on every request. */
export interface TargetParts {
  /** For the Host header and the request line. */
  readonly host: string;
  readonly pathname: string;
  /** Where to connect, and the pool's name for it. */
  readonly upstreamHost: string;
  readonly upstreamPort: number;
  readonly poolKey: string;
}

const TARGET_PARTS = new WeakMap<URL, TargetParts>();

/** The target's parts, read once per URL object: a URL's getters build new strings on every call. */
export function targetParts(target: URL): TargetParts {
  let parts = TARGET_PARTS.get(target);
  if (!parts) {
    const host = upstreamHost(target);
    const port = upstreamPort(target);
    parts = {
      host: target.host,
      pathname: target.pathname,
      upstreamHost: host,
      upstreamPort: port,
      poolKey: `${host}:${port}`,
    };
    TARGET_PARTS.set(target, parts);
  }
  return parts;
}
