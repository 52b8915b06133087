import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ConfigReader } from '../config-reader.ts';
import { join } from '../config-reader.ts';
import { parseDuration } from '../duration.ts';
import { compileGlob, type EmailGlob } from '../glob.ts';

export interface ShareOAuth {
  readonly provider: string;
  readonly emailPatterns: readonly EmailGlob[];
  readonly checkIntervalMs: number;
}

/**
 * Where the frontend sends a share's requests when they do not go to a URL: the tunnel to the agent
 * that holds the share (sidecar/tunnel). It answers failures itself (offline, busy, unreachable).
 */
export interface ShareUpstream {
  /** `setCookie`: a refreshed session cookie to add to the response. */
  web(req: IncomingMessage, res: ServerResponse, setCookie: string | undefined): void;
  ws(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** One share the frontend serves at `<token>.<cookie_domain>`. */
export interface ShareRoute {
  readonly token: string;
  /** A backend URL (proxied), or the tunnel of the environment that publishes the share. */
  readonly target: URL | ShareUpstream;
  readonly oauth?: ShareOAuth;
}

/** A share proxied to a backend URL (config files, the agent on one machine). */
export type DirectShareRoute = ShareRoute & { readonly target: URL };

export const DEFAULT_CHECK_INTERVAL = '3h';
/** A share token is the first DNS label of the share's host. */
export const SHARE_TOKEN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const SHARE_KEYS = ['token', 'target', 'oauth_provider', 'oauth_email_address_patterns', 'oauth_check_interval'];

/**
 * Validates one share's options (token, target, OAuth). Shared by the frontend config file and the
 * agent, so a share created through the CLI is held to exactly the same rules.
 */
export function readShareOptions(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  providerNames: readonly string[] | undefined,
): DirectShareRoute | undefined {
  const before = r.problems.length;
  const token = r.string(o, 'token', path);
  if (token !== undefined && !SHARE_TOKEN.test(token)) {
    r.problem(join(path, 'token'), 'must be a DNS label: lower-case letters, digits and -, at most 63 characters');
  }
  const target = r.url(o, 'target', path);
  const provider = r.string(o, 'oauth_provider', path, { required: false });
  if (provider !== undefined && providerNames && !providerNames.includes(provider)) {
    r.problem(
      join(path, 'oauth_provider'),
      `unknown provider ${JSON.stringify(provider)} (configured: ${providerNames.join(', ') || 'none'})`,
    );
  }
  const patternTexts = r.stringArray(o, 'oauth_email_address_patterns', path, { required: false }) ?? [];
  const emailPatterns: EmailGlob[] = [];
  patternTexts.forEach((text, i) => {
    try {
      emailPatterns.push(compileGlob(text));
    } catch (err) {
      r.problem(join(join(path, 'oauth_email_address_patterns'), i), (err as Error).message);
    }
  });
  const intervalText = r.string(o, 'oauth_check_interval', path, { required: false });
  const checkIntervalMs = parseDuration(intervalText ?? DEFAULT_CHECK_INTERVAL);
  if (checkIntervalMs === undefined) {
    r.problem(
      join(path, 'oauth_check_interval'),
      `must be a duration such as 30m or 3h, got ${JSON.stringify(intervalText)}`,
    );
  }
  if (provider === undefined && (patternTexts.length > 0 || intervalText !== undefined)) {
    r.problem(
      join(path, 'oauth_provider'),
      'required when oauth_email_address_patterns or oauth_check_interval is set',
    );
  }
  if (r.problems.length > before || !token || !target || checkIntervalMs === undefined) return undefined;
  return {
    token,
    target,
    ...(provider ? { oauth: { provider, emailPatterns, checkIntervalMs } } : {}),
  };
}
