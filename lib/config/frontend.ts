import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { ConfigReader, join, loadYamlFile } from '../config-reader.ts';
import type { ListenAddress } from '../listen.ts';
import type { ShareRoute } from '../share/spec.ts';
import { readProviders, type ProviderConfig } from './providers.ts';
import { readShareDirectory } from './share-directory.ts';
import type { ShareFileCache } from './share-file-cache.ts';
import { addShareItems, validateShareList } from './share-list.ts';

export interface OAuthConfig {
  readonly bindAddress: ListenAddress;
  readonly endpointUrl: URL;
  readonly cookieName: string;
  readonly cookieDomain: string;
  readonly sessionLifetimeMs: number;
  readonly intermediateLifetimeMs: number;
  /**
   * The installation's sealing keys; in a share pod's config (`authService` set), that share's own
   * keys, derived from the installation's (sidecar/share-keys.ts).
   */
  readonly signingKey: string;
  readonly encryptionKey: string;
  /** In a share pod's config, without client secrets: no provider's `clientSecret` is set. */
  readonly providers: readonly ProviderConfig[];
  /**
   * A share pod's frontend: the auth endpoint's internal URL and this share's credential there.
   * What needs the client secret (refresh) is asked of it; its config holds exactly one share.
   */
  readonly authService?: AuthServiceConfig;
  /** The auth endpoint's internal listener that share pods ask (installation keys only). */
  readonly internalAddress?: ListenAddress;
}

/** Where a share pod asks for what needs the client secret, and how it proves which share it is. */
export interface AuthServiceConfig {
  readonly url: URL;
  readonly credential: string;
}

export interface FrontendConfig {
  readonly oauth: OAuthConfig;
  /** The file's `shares` and those of every file in `share_directory`. */
  readonly shares: readonly ShareRoute[];
  /** `share_directory`, resolved: more shares, one list per `*.yaml` file (re-read with the file). */
  readonly shareDirectory?: string;
  /** Separate listener for /metrics, /healthz, /readyz; absent means no metrics listener. */
  readonly metricsAddress?: ListenAddress;
  /** Processes serving the listener (node:cluster); 1 (the default) is a single process. */
  readonly workers: number;
}

/** Upper bound of `workers`: far above any core count a frontend pod gets, low enough to catch a typo. */
export const MAX_WORKERS = 64;

const COOKIE_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const DOMAIN = /^\.?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export const TOP_KEYS = ['oauth', 'shares', 'share_directory', 'metrics_address', 'workers'];
export const OAUTH_KEYS = [
  'bind_address',
  'endpoint_url',
  'cookie_name',
  'cookie_domain',
  'session_lifetime',
  'intermediate_lifetime',
  'signing_key',
  'encryption_key',
  'providers',
  'auth_service',
  'internal_address',
];
const AUTH_SERVICE_KEYS = ['url', 'credential'];

/** How a frontend config is read besides its document. */
export interface FrontendConfigOptions {
  /** What a relative `share_directory` is resolved against (default: the working directory). */
  readonly baseDir?: string;
  /** The share files validated by earlier loads, reused where unchanged (a reloading process keeps one). */
  readonly shareFiles?: ShareFileCache;
}

/**
 * Loads and validates a frontend config file, with the share files of its `share_directory`
 * (relative to the file's directory); throws one ConfigError listing every problem.
 */
export function loadFrontendConfig(path: string, options: { shareFiles?: ShareFileCache } = {}): FrontendConfig {
  return parseFrontendConfig(loadYamlFile(path), path, { ...options, baseDir: dirname(path) });
}

/**
 * Validates a frontend config document. A relative `share_directory` is resolved against
 * `options.baseDir`, and its files are read here.
 */
export function parseFrontendConfig(
  doc: unknown,
  source = 'config',
  options: FrontendConfigOptions = {},
): FrontendConfig {
  const r = new ConfigReader();
  const top = r.object(doc, '(document)');
  let oauth: OAuthConfig | undefined;
  let shares: ShareRoute[] = [];
  let shareDirectory: string | undefined;
  let metricsAddress: ListenAddress | undefined;
  let workers = 1;
  if (top) {
    r.unknownKeys(top, '', TOP_KEYS);
    oauth = readOAuth(r, top.oauth, 'oauth', { sharePod: true });
    if (top.metrics_address !== undefined) metricsAddress = r.bindAddress(top, 'metrics_address', '');
    workers = readWorkers(r, top.workers);
    const dir = r.string(top, 'share_directory', '', { required: false });
    shareDirectory = dir === undefined ? undefined : resolve(options.baseDir ?? '.', dir);
    shares = readAllShares(r, top.shares, shareDirectory, oauth, options.shareFiles);
    if (isSharePod(top.oauth) && shares.length !== 1)
      r.problem(
        'shares',
        `must hold exactly the one share whose keys oauth.signing_key and oauth.encryption_key are (oauth.auth_service is set), got ${shares.length}`,
      );
  }
  r.finish(source);
  return {
    oauth: oauth as OAuthConfig,
    shares,
    ...(shareDirectory ? { shareDirectory } : {}),
    ...(metricsAddress ? { metricsAddress } : {}),
    workers,
  };
}

/** `workers`: a whole number 1–MAX_WORKERS, or `auto` (one per core this process may use). */
function readWorkers(r: ConfigReader, value: unknown): number {
  if (value === undefined || value === null) return 1;
  if (value === 'auto') return Math.min(availableParallelism(), MAX_WORKERS);
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= MAX_WORKERS) return value;
  r.problem('workers', `must be a whole number 1–${MAX_WORKERS} or "auto", got ${JSON.stringify(value)}`);
  return 1;
}

/** Whether an `oauth` section is a share pod's (it names `auth_service`). */
function isSharePod(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>).auth_service !== undefined;
}

/**
 * Validates the `oauth` section; exported for the single-machine service, which embeds it. Two
 * forms: the installation's (client secrets, installation keys, optionally `internal_address`) and,
 * where `sharePod` allows it, a share pod's (`auth_service`, the share's own keys, no client secret).
 */
export function readOAuth(
  r: ConfigReader,
  value: unknown,
  path = 'oauth',
  options: { sharePod?: boolean } = {},
): OAuthConfig | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  r.unknownKeys(o, path, OAUTH_KEYS);
  const role = readRole(r, o, path, options);
  const bindAddress = r.bindAddress(o, 'bind_address', path);
  const endpointUrl = readEndpointUrl(r, o, path);
  const { cookieName, cookieDomain } = readCookie(r, o, path, endpointUrl);
  const sessionLifetimeMs = r.duration(o, 'session_lifetime', path);
  const intermediateLifetimeMs = r.duration(o, 'intermediate_lifetime', path);
  const { signingKey, encryptionKey } = readSealingKeys(r, o, path);
  const providers = readProviders(r, o.providers, join(path, 'providers'), { secretless: role.sharePod });
  if (
    !role.complete ||
    !bindAddress ||
    !endpointUrl ||
    !cookieName ||
    !cookieDomain ||
    !sessionLifetimeMs ||
    !intermediateLifetimeMs ||
    !signingKey ||
    !encryptionKey ||
    !providers
  ) {
    return undefined;
  }
  return {
    bindAddress,
    endpointUrl,
    cookieName,
    cookieDomain,
    sessionLifetimeMs,
    intermediateLifetimeMs,
    signingKey,
    encryptionKey,
    providers,
    ...(role.authService ? { authService: role.authService } : {}),
    ...(role.internalAddress ? { internalAddress: role.internalAddress } : {}),
  };
}

/**
 * Whose section this is: a share pod's (`auth_service`, where allowed) or the installation's (with
 * an optional `internal_address` for share pods to ask). `complete` is false when the role's
 * settings could not be read.
 */
function readRole(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  options: { sharePod?: boolean },
): { sharePod: boolean; complete: boolean; authService?: AuthServiceConfig; internalAddress?: ListenAddress } {
  if (!isSharePod(o)) {
    if (o.internal_address === undefined) return { sharePod: false, complete: true };
    const internalAddress = r.bindAddress(o, 'internal_address', path);
    return {
      sharePod: false,
      complete: internalAddress !== undefined,
      ...(internalAddress ? { internalAddress } : {}),
    };
  }
  if (!options.sharePod)
    r.problem(join(path, 'auth_service'), "only a share pod's frontend config (svc frontend) takes it", 'not_allowed');
  const authService = readAuthService(r, o.auth_service, join(path, 'auth_service'));
  if (o.internal_address !== undefined)
    r.problem(
      join(path, 'internal_address'),
      'only the auth endpoint (installation keys) serves share pods; remove it or auth_service',
      'not_allowed',
    );
  return { sharePod: true, complete: authService !== undefined, ...(authService ? { authService } : {}) };
}

/** `endpoint_url`: a base URL, where logins start and come back. */
function readEndpointUrl(r: ConfigReader, o: Record<string, unknown>, path: string): URL | undefined {
  const endpointUrl = r.url(o, 'endpoint_url', path);
  if (endpointUrl && (endpointUrl.pathname !== '/' || endpointUrl.search || endpointUrl.hash || endpointUrl.username)) {
    r.problem(join(path, 'endpoint_url'), 'must be a base URL without path, query, fragment or credentials');
  }
  return endpointUrl;
}

/** The session cookie's name, and its domain (without a leading dot), which must hold the endpoint's host. */
function readCookie(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  endpointUrl: URL | undefined,
): { cookieName: string | undefined; cookieDomain: string | undefined } {
  const cookieName = r.string(o, 'cookie_name', path);
  if (cookieName !== undefined && !COOKIE_NAME.test(cookieName)) {
    r.problem(join(path, 'cookie_name'), "must be a valid cookie name (letters, digits, and !#$%&'*+-.^_`|~)");
  }
  const cookieDomain = r.string(o, 'cookie_domain', path)?.toLowerCase();
  if (cookieDomain !== undefined && !DOMAIN.test(cookieDomain)) {
    r.problem(
      join(path, 'cookie_domain'),
      `must be a DNS domain such as example.com, got ${JSON.stringify(cookieDomain)}`,
    );
  }
  const bareDomain = cookieDomain?.replace(/^\./, '');
  if (endpointUrl && bareDomain && !hostWithin(endpointUrl.hostname, bareDomain)) {
    r.problem(
      join(path, 'cookie_domain'),
      `must contain the endpoint_url host ${endpointUrl.hostname}, so the session cookie reaches the callback and logout`,
    );
  }
  return { cookieName, cookieDomain: bareDomain };
}

/** The sealing keys (`signing_key`, `encryption_key` under `path`): long enough, and two different ones. */
export function readSealingKeys(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
): { signingKey: string | undefined; encryptionKey: string | undefined } {
  const signingKey = r.string(o, 'signing_key', path, { minLength: 32 });
  const encryptionKey = r.string(o, 'encryption_key', path, { minLength: 24 });
  if (signingKey !== undefined && signingKey === encryptionKey) {
    r.problem(join(path, 'encryption_key'), 'must differ from signing_key');
  }
  return { signingKey, encryptionKey };
}

/** `oauth.auth_service`: the auth endpoint's internal base URL and this share's credential. */
function readAuthService(r: ConfigReader, value: unknown, path: string): AuthServiceConfig | undefined {
  const o = r.object(value, path);
  if (!o) return undefined;
  r.unknownKeys(o, path, AUTH_SERVICE_KEYS);
  const url = r.url(o, 'url', path);
  if (url && (url.pathname !== '/' || url.search || url.hash || url.username || url.password))
    r.problem(join(path, 'url'), 'must be a base URL without path, query, fragment or credentials');
  const credential = r.string(o, 'credential', path, { minLength: 32 });
  return url && credential ? { url, credential } : undefined;
}

/** `shares`, then the list of each file in `share_directory`; a token twice anywhere is a problem. */
function readAllShares(
  r: ConfigReader,
  value: unknown,
  shareDirectory: string | undefined,
  oauth: OAuthConfig | undefined,
  shareFiles: ShareFileCache | undefined,
): ShareRoute[] {
  if (value === undefined || value === null) {
    r.problem('shares', 'required: the list of shares this frontend serves (may be empty: [])');
    return [];
  }
  if (!Array.isArray(value)) {
    r.problem('shares', 'must be a list');
    return [];
  }
  const providerNames = oauth?.providers.map((p) => p.name);
  const seen = new Map<string, string>();
  const result: ShareRoute[] = [];
  addShareItems(r, validateShareList(value, 'shares', providerNames), seen, result);
  if (shareDirectory !== undefined)
    for (const items of readShareDirectory(r, shareDirectory, providerNames, shareFiles))
      addShareItems(r, items, seen, result);
  return result;
}

function hostWithin(host: string, domain: string): boolean {
  return host === domain || host.endsWith(`.${domain}`);
}
