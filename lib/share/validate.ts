import { ConfigReader, join } from '../config-reader.ts';
import type { ProblemCode } from '../error-codes.ts';
import type { Result } from '../errors.ts';
import { codePointLength, compileGlob, EMAIL_GLOB_MAX_LENGTH, EMAIL_GLOBS_MAX, type EmailGlob } from '../glob.ts';
import {
  BACKEND_MODES,
  DEFAULT_CHECK_INTERVAL,
  SHARE_MODES,
  SHARE_TOKEN,
  type BackendMode,
  type ShareMode,
} from './spec.ts';
import { parseDuration } from '../duration.ts';
import { parseTcpTarget, tcpTargetProblem } from './tcp-target.ts';
import { reservedTokenMessage } from './reserved-tokens.ts';

/** The fields of a share, in the product's own names (those of the API body). */
export type ShareField =
  | 'token'
  | 'shareMode'
  | 'backendMode'
  | 'target'
  | 'oauthProvider'
  | 'oauthEmailAddressPatterns'
  | 'oauthCheckInterval'
  | 'webListing'
  | 'webVolume';

/** A share as some surface states it, renamed to the product's field names; values not yet checked. */
export type ShareInput = { readonly [F in ShareField]?: unknown };

/**
 * How one surface spells each field: problems are reported at these paths, and messages that name
 * another field use them too. The surfaces' tables are in lib/share/surfaces.ts.
 */
export type ShareFieldNames = { readonly [F in ShareField]: string };

/** What the place that creates the share can do. */
export interface ShareRules {
  /** Backend modes it can create (both unless said otherwise). */
  readonly backendModes?: readonly BackendMode[];
  /** Why another backend mode cannot be created here (shown with the refused value). */
  readonly unsupportedBackend?: string;
  /** The OAuth providers configured; undefined when the provider is checked later, by whoever knows them. */
  readonly providerNames?: readonly string[];
  /** A web share's target here (a local folder, a path in a mounted volume): what is wrong with it. */
  readonly webTarget?: (target: string) => { message: string; code: ProblemCode } | undefined;
  /** The token is part of the input and must be given (a config file names its shares). */
  readonly tokenRequired?: boolean;
  /** `webVolume` is a field here (a Share object): exactly one source for a web share, none for proxy. */
  readonly webVolume?: boolean;
  /** The target stays with the agent (a share published through the tunnel): not part of the input. */
  readonly targetElsewhere?: boolean;
  /** Tokens the installation's own hosts use (lib/share/reserved-tokens.ts): token → host. */
  readonly reservedTokens?: ReadonlyMap<string, string>;
}

export interface ValidShareSpec {
  readonly token?: string;
  readonly shareMode: ShareMode;
  readonly backendMode: BackendMode;
  /** proxy: the URL as given; web: the folder; tcp: `host:port`; empty when the target stays elsewhere. */
  readonly target: string;
  /** proxy only: the parsed target. */
  readonly targetUrl?: URL;
  readonly oauth?: {
    readonly provider: string;
    readonly emailAddressPatterns: readonly string[];
    readonly emailPatterns: readonly EmailGlob[];
    /** As given; undefined means the default (DEFAULT_CHECK_INTERVAL). */
    readonly checkInterval?: string;
    readonly checkIntervalMs: number;
  };
  readonly webListing: boolean;
  readonly webVolume?: { readonly configMap?: string; readonly persistentVolumeClaim?: string };
}

/** A share's OAuth settings as records keep them: the patterns' text and the check interval, defaulted. */
export interface StoredShareOAuth {
  readonly provider: string;
  readonly emailAddressPatterns: string[];
  readonly checkInterval: string;
}

/** `{ oauth }` for a record (agent store, share registry, operator), or nothing for a share without OAuth. */
export function storedOAuth(spec: ValidShareSpec): { oauth?: StoredShareOAuth } {
  if (!spec.oauth) return {};
  return {
    oauth: {
      provider: spec.oauth.provider,
      emailAddressPatterns: [...spec.oauth.emailAddressPatterns],
      checkInterval: spec.oauth.checkInterval ?? DEFAULT_CHECK_INTERVAL,
    },
  };
}

const TOKEN_RULE = 'must be a DNS label: lower-case letters, digits and -, at most 63 characters';

/**
 * The one validator of a share, whichever surface states it: the frontend config file
 * (`shares[]`), the CLI, the API body (both executors), the Share object. Every problem is returned
 * at once, each with the surface's field path, a stable code and the same message for the same
 * mistake; the surface's adapter only renames fields (`names`) and says what it can create
 * (`rules`); `under` prefixes every path (a config file's `shares[0]`). Order: token, share mode,
 * backend mode (tcp private only), target, web volume, OAuth provider, OAuth on a private share,
 * email patterns, check interval, web listing.
 */
export function validateShareSpec(
  input: ShareInput,
  fieldNames: ShareFieldNames,
  rules: ShareRules = {},
  under = '',
): Result<ValidShareSpec> {
  const r = new ConfigReader();
  const share: ShareReading = {
    r,
    input,
    paths: under ? pathsUnder(under, fieldNames) : fieldNames,
    fieldNames,
    rules,
  };
  const token = tokenOf(share);
  const { shareMode, backendMode } = modesOf(share);
  const { target, targetUrl } = targetOf(share, backendMode);
  const webVolume = rules.webVolume ? webVolumeOf(r, input.webVolume, backendMode, share.paths, fieldNames) : undefined;
  const oauth = oauthOf(share, shareMode);
  const webListing = webListingOf(share, backendMode);
  if (r.problems.length > 0 || !shareMode || !backendMode || target === undefined || oauth === undefined) {
    return { ok: false, problems: r.problems };
  }
  return {
    ok: true,
    value: {
      ...(token !== undefined ? { token } : {}),
      shareMode,
      backendMode,
      target,
      ...(targetUrl ? { targetUrl } : {}),
      ...(oauth !== 'none' ? { oauth } : {}),
      webListing,
      ...(webVolume ? { webVolume } : {}),
    },
  };
}

/** One share being read: the reader collecting problems, the input, its problem paths and names, the surface's rules. */
interface ShareReading {
  readonly r: ConfigReader;
  readonly input: ShareInput;
  /** Problem paths: the surface's field names under `under` (a config file's `shares[0]`). */
  readonly paths: ShareFieldNames;
  /** The surface's field names, for messages that name another field. */
  readonly fieldNames: ShareFieldNames;
  readonly rules: ShareRules;
}

function given(input: ShareInput, f: ShareField): boolean {
  return input[f] !== undefined && input[f] !== null;
}

/** The token, when given or required: a DNS label, not one of the installation's own hosts. */
function tokenOf({ r, input, paths, rules }: ShareReading): string | undefined {
  if (!given(input, 'token') && !rules.tokenRequired) return undefined;
  const token = r.stringAt(input.token, paths.token);
  if (token !== undefined && !SHARE_TOKEN.test(token)) r.problem(paths.token, TOKEN_RULE);
  const reservedHost = token !== undefined ? rules.reservedTokens?.get(token) : undefined;
  if (token !== undefined && reservedHost)
    r.problem(paths.token, reservedTokenMessage(token, reservedHost), 'not_allowed');
  return token;
}

/** Share and backend mode (defaults public and proxy); tcp only for a private share. */
function modesOf({ r, input, paths, fieldNames, rules }: ShareReading): {
  shareMode: ShareMode | undefined;
  backendMode: BackendMode | undefined;
} {
  const shareMode = oneOf(r, input.shareMode ?? 'public', paths.shareMode, SHARE_MODES);
  const backendMode = backendModeOf(r, input.backendMode ?? 'proxy', paths.backendMode, rules);
  if (backendMode === 'tcp' && shareMode === 'public') {
    r.problem(
      paths.backendMode,
      `tcp applies to private shares only: a TCP share is reached through an access, never on the public frontend (got ${fieldNames.shareMode} public)`,
      'not_allowed',
    );
  }
  return { shareMode, backendMode };
}

/** The target as the backend mode reads it: a folder (web), `host:port` (tcp), a URL (proxy), or none here. */
function targetOf(
  { r, input, paths, rules }: ShareReading,
  backendMode: BackendMode | undefined,
): { target: string | undefined; targetUrl?: URL | undefined } {
  if (rules.targetElsewhere) return { target: '' };
  if (backendMode === 'web') {
    const target = r.stringAt(input.target, paths.target);
    const wrong = target !== undefined ? rules.webTarget?.(target) : undefined;
    if (wrong) r.problem(paths.target, wrong.message, wrong.code);
    return { target };
  }
  if (backendMode === 'tcp') {
    const target = r.stringAt(input.target, paths.target);
    if (target !== undefined && !parseTcpTarget(target)) r.problem(paths.target, tcpTargetProblem(target));
    return { target };
  }
  const targetUrl = r.urlAt(input.target, paths.target);
  return { target: typeof input.target === 'string' ? input.target : undefined, targetUrl };
}

/**
 * The OAuth settings: `'none'` without a provider, undefined when the check interval is not a
 * duration (the other problems are recorded and leave the settings as far as they could be read).
 */
function oauthOf(share: ShareReading, shareMode: ShareMode | undefined): ValidShareSpec['oauth'] | 'none' | undefined {
  const { r, input, paths } = share;
  const provider = providerOf(share);
  const wantsOAuth =
    given(input, 'oauthProvider') || given(input, 'oauthEmailAddressPatterns') || given(input, 'oauthCheckInterval');
  if (wantsOAuth && shareMode === 'private') {
    r.problem(
      paths.oauthProvider,
      'OAuth options apply to public shares only (a private share is reached through an access)',
      'not_allowed',
    );
  }
  const patterns = r.stringArrayAt(input.oauthEmailAddressPatterns, paths.oauthEmailAddressPatterns, {
    required: false,
  });
  const emailPatterns = emailGlobsOf(r, patterns, paths.oauthEmailAddressPatterns);
  const checkInterval = r.stringAt(input.oauthCheckInterval, paths.oauthCheckInterval, { required: false });
  const checkIntervalMs = parseDuration(checkInterval ?? DEFAULT_CHECK_INTERVAL);
  if (checkIntervalMs === undefined) {
    r.problem(paths.oauthCheckInterval, `must be a duration such as 30m or 3h, got ${JSON.stringify(checkInterval)}`);
    return undefined;
  }
  if (provider === undefined) return 'none';
  return {
    provider,
    emailAddressPatterns: patterns ?? [],
    emailPatterns,
    ...(checkInterval !== undefined ? { checkInterval } : {}),
    checkIntervalMs,
  };
}

/** The OAuth provider: required with the other OAuth options, and one the surface knows (when it knows them). */
function providerOf({ r, input, paths, fieldNames, rules }: ShareReading): string | undefined {
  const provider = r.stringAt(input.oauthProvider, paths.oauthProvider, { required: false });
  if (provider === undefined && (given(input, 'oauthEmailAddressPatterns') || given(input, 'oauthCheckInterval'))) {
    r.problem(
      paths.oauthProvider,
      `required when ${fieldNames.oauthEmailAddressPatterns} or ${fieldNames.oauthCheckInterval} is set`,
      'required',
    );
  }
  const known = rules.providerNames;
  if (provider !== undefined && known && !known.includes(provider)) {
    r.problem(
      paths.oauthProvider,
      `unknown provider ${JSON.stringify(provider)} (configured: ${known.join(', ') || 'none'})`,
      'unknown_provider',
    );
  }
  return provider;
}

/** Web listing (default off): for a web share only. */
function webListingOf({ r, input, paths, fieldNames }: ShareReading, backendMode: BackendMode | undefined): boolean {
  const webListing = r.booleanAt(input.webListing, paths.webListing, { required: false }) ?? false;
  if (webListing && backendMode !== 'web') {
    r.problem(paths.webListing, `applies to ${fieldNames.backendMode} web only`, 'not_allowed');
  }
  return webListing;
}

/** A glob for a mailbox: one `@` and no whitespace, as the Share schema's pattern (crds/) demands everywhere. */
const MAILBOX_GLOB = /^[^@\s]+@[^@\s]+$/u;

/** Compiles a share's email globs; bounds their number and length (the matcher's work grows with both). */
function emailGlobsOf(r: ConfigReader, patterns: readonly string[] | undefined, path: string): EmailGlob[] {
  if (patterns && patterns.length > EMAIL_GLOBS_MAX) {
    r.problem(path, `at most ${EMAIL_GLOBS_MAX} patterns, got ${patterns.length}`, 'not_allowed');
  }
  const globs: EmailGlob[] = [];
  patterns?.slice(0, EMAIL_GLOBS_MAX).forEach((text, i) => {
    const length = codePointLength(text);
    if (length > EMAIL_GLOB_MAX_LENGTH) {
      r.problem(`${path}[${i}]`, `at most ${EMAIL_GLOB_MAX_LENGTH} characters, got ${length}`, 'not_allowed');
      return;
    }
    let glob: EmailGlob;
    try {
      glob = compileGlob(text);
    } catch (err) {
      r.problem(`${path}[${i}]`, (err as Error).message);
      return;
    }
    if (MAILBOX_GLOB.test(text)) globs.push(glob);
    else r.problem(`${path}[${i}]`, `must hold exactly one @ and no whitespace, got ${JSON.stringify(text)}`);
  });
  return globs;
}

function oneOf<T extends string>(r: ConfigReader, value: unknown, path: string, allowed: readonly T[]): T | undefined {
  const found = allowed.find((a) => a === value);
  if (!found) r.problem(path, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`, 'not_allowed');
  return found;
}

function backendModeOf(r: ConfigReader, value: unknown, path: string, rules: ShareRules): BackendMode | undefined {
  const mode = oneOf(r, value, path, BACKEND_MODES);
  if (!mode || (rules.backendModes ?? BACKEND_MODES).includes(mode)) return mode;
  r.problem(path, `${rules.unsupportedBackend ?? 'not supported here'}, got ${JSON.stringify(mode)}`, 'unsupported');
  return undefined;
}

/** A Share object's web volume: exactly one source for a web share, none for a proxy share. */
function webVolumeOf(
  r: ConfigReader,
  value: unknown,
  backendMode: BackendMode | undefined,
  names: ShareFieldNames,
  fieldNames: ShareFieldNames,
): ValidShareSpec['webVolume'] {
  const volume = r.object(value, names.webVolume, { required: false });
  if (backendMode === 'proxy' && volume) {
    r.problem(names.webVolume, `only applies to ${fieldNames.backendMode} web`, 'not_allowed');
  }
  if (backendMode !== 'web') return undefined;
  const configMap = volume && r.string(volume, 'configMap', names.webVolume, { required: false });
  const persistentVolumeClaim =
    volume && r.string(volume, 'persistentVolumeClaim', names.webVolume, { required: false });
  if ((configMap === undefined) === (persistentVolumeClaim === undefined)) {
    r.problem(
      names.webVolume,
      `set exactly one of configMap or persistentVolumeClaim for ${fieldNames.backendMode} web`,
      'required',
    );
  }
  return { ...(configMap ? { configMap } : {}), ...(persistentVolumeClaim ? { persistentVolumeClaim } : {}) };
}

function pathsUnder(under: string, names: ShareFieldNames): ShareFieldNames {
  return Object.fromEntries(Object.entries(names).map(([f, name]) => [f, join(under, name)])) as ShareFieldNames;
}
