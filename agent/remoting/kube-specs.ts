import { parseDuration } from '../../lib/duration.ts';
import { badInput } from '../../lib/errors.ts';
import { compileGlob } from '../../lib/glob.ts';
import type { AccessSpec, ShareSpec } from '../../lib/kube/resources.ts';
import { listenAddressProblem, parseListenAddress } from '../../lib/listen.ts';
import type { RemoteShareArgs } from './executor.ts';

/** The Access Service's port when `/agent/access` names no bind address. */
export const DEFAULT_BIND_PORT = 8080;

/**
 * A Share spec from `/agent/share` arguments. Only proxy shares can be created remotely: a web share
 * in a cluster serves a volume (spec.webVolume), which the API cannot name. Every problem is reported
 * at once, with the API's field names.
 */
export function shareSpecFromArgs(args: RemoteShareArgs, token: string): ShareSpec & { token: string } {
  const problems: string[] = [];
  const shareMode = args.shareMode;
  if (shareMode !== 'public' && shareMode !== 'private') {
    problems.push(`shareMode: must be public or private, got ${JSON.stringify(shareMode)}`);
  }
  if (args.backendMode !== 'proxy') {
    problems.push(
      `backendMode: only proxy shares can be created remotely in a Kubernetes environment (a web share serves a volume: create the Share object with spec.webVolume), got ${JSON.stringify(args.backendMode)}`,
    );
  }
  if (!isHttpUrl(args.target)) {
    problems.push(`target: must be an absolute http or https URL, got ${JSON.stringify(args.target)}`);
  }
  const oauthWanted =
    args.oauthProvider !== undefined ||
    args.oauthEmailAddressPatterns !== undefined ||
    args.oauthCheckInterval !== undefined;
  if (oauthWanted && args.oauthProvider === undefined) {
    problems.push('oauthProvider: required when oauthEmailAddressPatterns or oauthCheckInterval is given');
  }
  if (oauthWanted && shareMode !== 'public') problems.push('oauthProvider: OAuth applies to public shares only');
  (args.oauthEmailAddressPatterns ?? []).forEach((pattern, i) => {
    try {
      compileGlob(pattern);
    } catch (err) {
      problems.push(`oauthEmailAddressPatterns[${i}]: ${(err as Error).message}`);
    }
  });
  if (args.oauthCheckInterval !== undefined && parseDuration(args.oauthCheckInterval) === undefined) {
    problems.push(
      `oauthCheckInterval: must be a duration such as 30m or 3h, got ${JSON.stringify(args.oauthCheckInterval)}`,
    );
  }
  if (problems.length > 0) throw badInput(problems.join('; '), 'invalid_share');
  return {
    shareMode: shareMode as 'public' | 'private',
    backendMode: 'proxy',
    target: args.target,
    token,
    ...(args.oauthProvider !== undefined
      ? {
          oauth: {
            provider: args.oauthProvider,
            ...(args.oauthEmailAddressPatterns?.length
              ? { emailAddressPatterns: [...args.oauthEmailAddressPatterns] }
              : {}),
            ...(args.oauthCheckInterval !== undefined ? { checkInterval: args.oauthCheckInterval } : {}),
          },
        }
      : {}),
  };
}

/** An Access spec from `/agent/access` arguments: the port of `bindAddress` becomes spec.bindPort. */
export function accessSpecFromArgs(args: { shareToken: string; bindAddress?: string }): AccessSpec & {
  shareToken: string;
} {
  let bindPort = DEFAULT_BIND_PORT;
  if (args.bindAddress !== undefined) {
    const address = parseListenAddress(args.bindAddress);
    if (!address) throw badInput(`bindAddress: ${listenAddressProblem(args.bindAddress)}`, 'invalid_bind');
    if (address.port === 0)
      throw badInput(
        "bindAddress: port 0 (a free port) cannot be the access Service's port; name a port 1-65535",
        'invalid_bind',
      );
    bindPort = address.port;
  }
  return { shareToken: args.shareToken, bindPort };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
