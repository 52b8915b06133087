import { isAbsolute } from 'node:path';
import { ConfigReader } from '../lib/config-reader.ts';
import { SvcError, problemsMessage } from '../lib/errors.ts';
import { DEFAULT_CHECK_INTERVAL, readShareOptions } from '../lib/share/spec.ts';
import { assertDirectory } from './backends/web.ts';
import { BACKEND_MODES } from './backends/types.ts';
import { SHARE_MODES, type ShareRecord } from './store.ts';

/** A share request as the CLI (and later the remote API) sends it; every field is checked here. */
export interface ShareRequest {
  readonly shareMode?: unknown;
  readonly backendMode?: unknown;
  readonly target?: unknown;
  readonly oauthProvider?: unknown;
  readonly oauthEmailAddressPatterns?: unknown;
  readonly oauthCheckInterval?: unknown;
  readonly webListing?: unknown;
}

/**
 * Validates a share request into a record, reporting every problem at once. Target URL, provider,
 * email globs and check interval go through the frontend's own `readShareOptions`, so a share made
 * from the CLI obeys exactly the rules of a frontend config file. `providerNames` are the providers
 * configured on this service (none when it runs without an `oauth` section).
 */
export function validateShareRequest(body: ShareRequest, token: string, providerNames: readonly string[]): ShareRecord {
  const r = new ConfigReader();
  const shareMode = oneOf(r, body.shareMode ?? 'public', 'shareMode', SHARE_MODES);
  const backendMode = oneOf(r, body.backendMode ?? 'proxy', 'backendMode', BACKEND_MODES);
  const target = typeof body.target === 'string' ? body.target : undefined;
  if (target === undefined || target === '') r.problem('target', 'required');
  if (target && backendMode === 'web') {
    if (!isAbsolute(target))
      r.problem('target', `must be an absolute folder path for backend mode web, got ${JSON.stringify(target)}`);
    else {
      try {
        assertDirectory(target);
      } catch (err) {
        r.problem('target', (err as Error).message);
      }
    }
  }
  const hasOAuth =
    body.oauthProvider !== undefined ||
    body.oauthEmailAddressPatterns !== undefined ||
    body.oauthCheckInterval !== undefined;
  if (hasOAuth && shareMode === 'private') {
    r.problem(
      'oauthProvider',
      'OAuth options apply to public shares only (a private share is reached through an access)',
    );
  }
  const options: Record<string, unknown> = {
    token,
    // A web share's frontend target is its local listener; only the URL rules matter for proxy.
    target: backendMode === 'web' ? 'http://127.0.0.1/' : target,
    oauth_provider: body.oauthProvider,
    oauth_email_address_patterns: body.oauthEmailAddressPatterns,
    oauth_check_interval: body.oauthCheckInterval,
  };
  const route = readShareOptions(r, options, '', providerNames);
  if (body.webListing !== undefined && typeof body.webListing !== 'boolean')
    r.problem('webListing', 'must be true or false');
  if (body.webListing === true && backendMode !== 'web') r.problem('webListing', 'applies to backend mode web only');
  if (r.problems.length > 0 || !route || !shareMode || !backendMode || !target) {
    throw new SvcError('invalid_share', problemsMessage('invalid share', r.problems), {
      status: 400,
      problems: r.problems,
    });
  }
  return {
    token,
    shareMode,
    backendMode,
    target: backendMode === 'proxy' ? route.target.href : target,
    ...(route.oauth
      ? {
          oauth: {
            provider: route.oauth.provider,
            emailAddressPatterns: route.oauth.emailPatterns.map((g) => g.source),
            checkInterval:
              typeof body.oauthCheckInterval === 'string' ? body.oauthCheckInterval : DEFAULT_CHECK_INTERVAL,
          },
        }
      : {}),
    ...(body.webListing === true ? { webListing: true } : {}),
    createdAt: new Date().toISOString(),
  };
}

function oneOf<T extends string>(r: ConfigReader, value: unknown, field: string, allowed: readonly T[]): T | undefined {
  const found = allowed.find((a) => a === value);
  if (!found) r.problem(field, `must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return found;
}
