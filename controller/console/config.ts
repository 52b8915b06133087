import type { ConfigReader } from '../../lib/config-reader.ts';
import { readConsoleOAuth, type ConsoleOAuthConfig } from './oauth-config.ts';

/** The `console` section of the installation's config (docs/controller.md, "Console"). */
export interface ConsoleConfig {
  /** The console's public origin (the API host as browsers reach it); the bound API address when absent. */
  readonly publicUrl?: URL;
  /** Emails (case-insensitive) that see the admin view once signed in (by token or a provider). */
  readonly admins: readonly string[];
  /** How long a console sign-in lasts (default 8h). */
  readonly sessionLifetimeMs: number;
  /** Sign in with the installation's OAuth providers too (default true when an oauth section exists). */
  readonly oauthSignIn: boolean;
  /** `console.oauth`: the providers and sealing keys of the controller alone (no installation `oauth`). */
  readonly oauth?: ConsoleOAuthConfig;
}

const KEYS = ['public_url', 'admins', 'session_lifetime', 'oauth_sign_in', 'oauth'];
export const DEFAULT_CONSOLE_SESSION_MS = 8 * 3_600_000;
const EMAIL = /^[^@\s]+@[^@\s]+$/;

/**
 * Reads `console` (absent: the console with defaults and no admins), reporting every problem to `r`.
 * `console.oauth` is read only where `options.oauth` allows it (`svc controller` alone); the
 * installation's console signs in with the installation's own `oauth` section.
 */
export function readConsoleConfig(
  r: ConfigReader,
  value: unknown,
  options: { readonly oauth?: boolean } = {},
): ConsoleConfig {
  const section = value === undefined ? {} : (r.object(value, 'console') ?? {});
  r.unknownKeys(section, 'console', KEYS);
  const publicUrl = r.url(section, 'public_url', 'console', { required: false });
  if (publicUrl && publicUrl.pathname !== '/') r.problem('console.public_url', 'must be an origin without a path');
  const admins = r.stringArray(section, 'admins', 'console', { required: false }) ?? [];
  admins.forEach((a, i) => {
    if (!EMAIL.test(a)) r.problem(`console.admins[${i}]`, `must be an email address, got ${JSON.stringify(a)}`);
  });
  const lifetime = r.duration(section, 'session_lifetime', 'console', { required: false });
  const oauthSignIn = r.boolean(section, 'oauth_sign_in', 'console', { required: false });
  const oauth = readOAuthSection(r, section.oauth, options.oauth ?? false);
  return {
    ...(publicUrl ? { publicUrl } : {}),
    admins: admins.map((a) => a.toLowerCase()),
    sessionLifetimeMs: lifetime ?? DEFAULT_CONSOLE_SESSION_MS,
    oauthSignIn: oauthSignIn ?? true,
    ...(oauth ? { oauth } : {}),
  };
}

/** `console.oauth` where allowed; elsewhere its presence is a problem naming what to use instead. */
function readOAuthSection(r: ConfigReader, value: unknown, allowed: boolean): ConsoleOAuthConfig | undefined {
  if (value === undefined) return undefined;
  if (allowed) return readConsoleOAuth(r, value);
  r.problem(
    'console.oauth',
    "only svc controller without a frontend or oauth section takes it: the installation's console signs in with its oauth section",
    'not_allowed',
  );
  return undefined;
}
