import { isAbsolute } from 'node:path';
import { errorText, valueOrThrow } from '../lib/errors.ts';
import { storedOAuth, validateShareSpec, type ShareFieldNames, type ShareRules } from '../lib/share/validate.ts';
import { assertDirectory } from './backends/web.ts';
import type { ShareRecord } from './store.ts';

/** A share request as the CLI (through the local API) or a remote command sends it; nothing checked yet. */
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
 * The local agent's adapter of `validateShareSpec` (lib/share/validate.ts): one validator for every
 * surface, so a share made here obeys exactly the rules of a frontend config file or a Share object.
 * This agent creates both backend modes; a web share serves an existing absolute folder of this
 * machine, and a provider must be one configured on this service (none without an `oauth`
 * section). `names` are the field names of the surface that asked (CLI flags or the API body).
 * Every problem at once, as one `invalid_share` error.
 */
export function validateShareRequest(
  body: ShareRequest,
  token: string,
  providerNames: readonly string[],
  names: ShareFieldNames,
): ShareRecord {
  const rules: ShareRules = { providerNames, webTarget: localFolderProblem };
  const input = {
    shareMode: body.shareMode,
    backendMode: body.backendMode,
    target: body.target,
    oauthProvider: body.oauthProvider,
    oauthEmailAddressPatterns: body.oauthEmailAddressPatterns,
    oauthCheckInterval: body.oauthCheckInterval,
    webListing: body.webListing,
  };
  const spec = valueOrThrow(validateShareSpec(input, names, rules), 'invalid_share', 'invalid share');
  return {
    token,
    shareMode: spec.shareMode,
    backendMode: spec.backendMode,
    target: spec.targetUrl ? spec.targetUrl.href : spec.target,
    ...storedOAuth(spec),
    ...(spec.webListing ? { webListing: true } : {}),
    createdAt: new Date().toISOString(),
  };
}

/** A web share on this machine serves an existing folder, named absolutely. */
function localFolderProblem(target: string): { message: string; code: 'invalid' | 'not_found' } | undefined {
  if (!isAbsolute(target))
    return { message: `must be an absolute folder path, got ${JSON.stringify(target)}`, code: 'invalid' };
  try {
    assertDirectory(target);
  } catch (err) {
    return { message: errorText(err), code: 'not_found' };
  }
  return undefined;
}
