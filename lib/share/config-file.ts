import { join, type ConfigReader } from '../config-reader.ts';
import { SHARE_INSTANCE, type DirectShareRoute } from './spec.ts';
import { CONFIG_FILE_SHARE_FIELDS } from './surfaces.ts';
import { validateShareSpec } from './validate.ts';

/**
 * One share of a frontend config file (`shares[i]` at `path`): the config-file adapter of
 * `validateShareSpec` (lib/share/validate.ts), so a share in a file obeys exactly the rules of a
 * share made through the CLI, the API or a Share object. `instance` (optional) is the identity
 * sessions are bound to; without it the token is the identity, so a file that gives a token to
 * another backend must name a new instance to sign its visitors out. Problems go to `r`; undefined
 * when any.
 */
export function readShareOptions(
  r: ConfigReader,
  o: Record<string, unknown>,
  path: string,
  providerNames: readonly string[] | undefined,
): DirectShareRoute | undefined {
  const instance = r.string(o, 'instance', path, { required: false });
  if (instance !== undefined && !SHARE_INSTANCE.test(instance)) {
    r.problem(join(path, 'instance'), 'must be 1 to 128 printable characters without spaces');
  }
  const result = validateShareSpec(
    {
      token: o.token,
      target: o.target,
      oauthProvider: o.oauth_provider,
      oauthEmailAddressPatterns: o.oauth_email_address_patterns,
      oauthCheckInterval: o.oauth_check_interval,
    },
    CONFIG_FILE_SHARE_FIELDS,
    { backendModes: ['proxy'], tokenRequired: true, ...(providerNames ? { providerNames } : {}) },
    path,
  );
  if (!result.ok) {
    r.problems.push(...result.problems);
    return undefined;
  }
  const { token, targetUrl, oauth } = result.value;
  if (token === undefined || !targetUrl) return undefined;
  return {
    token,
    instance: instance ?? token,
    target: targetUrl,
    ...(oauth
      ? {
          oauth: {
            provider: oauth.provider,
            emailPatterns: oauth.emailPatterns,
            checkIntervalMs: oauth.checkIntervalMs,
          },
        }
      : {}),
  };
}
