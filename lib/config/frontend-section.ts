import { join, type ConfigReader } from '../config-reader.ts';
import type { ListenAddress } from '../listen.ts';
import { readOAuth, type OAuthConfig } from './frontend.ts';

/** The public frontend's `frontend` section, with what an `oauth` section decides in its place. */
export interface FrontendSection {
  /** Where the public frontend listens. */
  readonly listen: ListenAddress;
  /** Share hosts are `<token>.<domain>`. */
  readonly domain: string;
  /** Scheme and port of emitted share URLs; absent means `http` and the port actually listened on. */
  readonly endpointUrl?: URL;
  readonly metricsListen?: ListenAddress;
}

export const DEFAULT_FRONTEND_DOMAIN = 'svc.localhost';
export const DEFAULT_FRONTEND_LISTEN: ListenAddress = { host: '127.0.0.1', port: 8080 };
const FRONTEND_KEYS = ['listen', 'domain', 'endpoint_url', 'metrics_listen'];
const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The `frontend` and `oauth` sections shared by `svc serve`, the one-machine installation and
 * `svc public-frontend` (every problem recorded in `r` with its field path). With an `oauth` section
 * the listen address, share domain and public URL come from `oauth.bind_address`,
 * `oauth.cookie_domain` and `oauth.endpoint_url` (shares at `<token>.<cookie_domain>`), so they
 * cannot disagree; `frontend.listen`, `frontend.domain` and `frontend.endpoint_url` are then refused.
 */
export function readFrontendSections(
  r: ConfigReader,
  top: Record<string, unknown>,
): { frontend: FrontendSection; oauth?: OAuthConfig } {
  const hasOAuth = top.oauth !== undefined && top.oauth !== null;
  const oauth = hasOAuth ? readOAuth(r, top.oauth) : undefined;
  const f = r.object(top.frontend, 'frontend', { required: false }) ?? {};
  r.unknownKeys(f, 'frontend', FRONTEND_KEYS);
  if (hasOAuth) {
    const from = { listen: 'bind_address', domain: 'cookie_domain', endpoint_url: 'endpoint_url' } as const;
    for (const [key, oauthKey] of Object.entries(from)) {
      if (f[key] !== undefined)
        r.problem(join('frontend', key), `comes from oauth.${oauthKey} when an oauth section is present; remove it`);
    }
  }
  const listen = !hasOAuth && f.listen !== undefined ? r.bindAddress(f, 'listen', 'frontend') : undefined;
  const domain = !hasOAuth ? readDomain(r, f, 'domain', 'frontend', { required: false }) : undefined;
  const endpointUrl = !hasOAuth ? readBaseUrl(r, f, 'endpoint_url', 'frontend', { required: false }) : undefined;
  const metricsListen = f.metrics_listen !== undefined ? r.bindAddress(f, 'metrics_listen', 'frontend') : undefined;
  return {
    frontend: {
      listen: oauth?.bindAddress ?? listen ?? DEFAULT_FRONTEND_LISTEN,
      domain: oauth?.cookieDomain ?? domain ?? DEFAULT_FRONTEND_DOMAIN,
      ...(oauth ? { endpointUrl: oauth.endpointUrl } : endpointUrl ? { endpointUrl } : {}),
      ...(metricsListen ? { metricsListen } : {}),
    },
    ...(oauth ? { oauth } : {}),
  };
}

/** Reads one field of `obj` at `path.key`; undefined (with a problem recorded) when it is not valid. */
export type FieldRead<T> = (
  r: ConfigReader,
  obj: Record<string, unknown>,
  key: string,
  path: string,
  options?: { required?: boolean },
) => T | undefined;

/** `read` plus one rule: a value that breaks it is a problem at its field path, and undefined. */
function withRule<T>(read: FieldRead<T>, rule: (value: T) => string | undefined): FieldRead<T> {
  return (r, obj, key, path, options = {}) => {
    const value = read(r, obj, key, path, options);
    const problem = value === undefined ? undefined : rule(value);
    if (problem) r.problem(join(path, key), problem);
    return problem ? undefined : value;
  };
}

/** A share domain (`share.example.com`), lower-cased. */
export const readDomain: FieldRead<string> = withRule(
  (r, obj, key, path, options) => r.string(obj, key, path, options)?.toLowerCase(),
  (domain) =>
    DOMAIN.test(domain) ? undefined : `must be a DNS domain such as share.example.com, got ${JSON.stringify(domain)}`,
);

/** A public base URL: http(s), no path, query, fragment or credentials. */
export const readBaseUrl: FieldRead<URL> = withRule(
  (r, obj, key, path, options) => r.url(obj, key, path, options),
  (url) =>
    url.pathname !== '/' || url.search || url.hash || url.username || url.password
      ? 'must be a base URL without path, query, fragment or credentials'
      : undefined,
);
