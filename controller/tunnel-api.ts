import { SvcError } from '../lib/errors.ts';
import { apiError } from './errors.ts';
import { hashesMatch, parseToken } from './tokens.ts';
import type { ShareAnnouncement, ShareRegistry } from './share-registry.ts';
import type { ControllerStore, EnvironmentRecord } from './store.ts';

type Body = Record<string, unknown>;

/** What the installation tells an agent about its tunnel (`/tunnel/info`). */
export interface TunnelOffer {
  /** Where agents dial their tunnel: a URL, or a path on the API host (`/api/v1/tunnel`). */
  readonly tunnelUrl: string;
  /** Where agents dial for private accesses (`/api/v1/tunnel/access`), likewise. */
  readonly accessUrl: string;
  /** The public URL of a share token. */
  shareUrl(token: string): string;
}

/** An operation of an environment's agent, authenticated by the environment token instead of an account token. */
export interface EnvironmentOperation {
  readonly environment: true;
  handle(env: EnvironmentRecord, body: Body): Promise<unknown>;
}

/** The environment an environment token (`svcv_<envZId>_<secret>`) proves; hash compared in constant time. */
export async function environmentOfToken(
  store: ControllerStore,
  token: string | undefined,
): Promise<EnvironmentRecord | undefined> {
  const parsed = token ? parseToken('svcv', token.trim()) : undefined;
  if (!parsed) return undefined;
  const env = await store.getEnvironment(parsed.id);
  return env?.tokenHash && hashesMatch(parsed.hash, env.tokenHash) ? env : undefined;
}

/**
 * The `/tunnel` operations (docs/controller.md, "The share registry"): how an agent learns where to
 * dial, and how it publishes, withdraws and reconciles its shares in the registry. Without a public
 * frontend for tunnels (a plain `svc controller`, or the controller inside `svc serve`) they answer
 * 501 `tunnel_not_offered`, and the agent keeps serving its shares on its own frontend.
 */
export function tunnelOperations(tunnel?: {
  registry: ShareRegistry;
  offer: TunnelOffer;
}): Map<string, EnvironmentOperation> {
  const offered = () => {
    if (!tunnel) {
      throw apiError(
        'tunnel_not_offered',
        'this controller runs without a public frontend for tunnels; shares stay on the agent',
      );
    }
    return tunnel;
  };
  const op = (handle: EnvironmentOperation['handle']): EnvironmentOperation => ({ environment: true, handle });
  const shareResponse = (token: string) => {
    const entry = offered().registry.lookup(token);
    return { token, frontendEndpoints: entry?.shareMode === 'public' ? [offered().offer.shareUrl(token)] : [] };
  };
  return new Map<string, EnvironmentOperation>([
    [
      '/tunnel/info',
      op(() => {
        const { offer, registry } = offered();
        return Promise.resolve({
          tunnelUrl: offer.tunnelUrl,
          accessUrl: offer.accessUrl,
          shareUrl: offer.shareUrl('{token}'),
          providers: [...registry.providerNames],
        });
      }),
    ],
    [
      '/tunnel/shares/register',
      op(async (env, body) => {
        await offered().registry.register(env, body as unknown as ShareAnnouncement);
        return shareResponse(String(body.token));
      }),
    ],
    [
      '/tunnel/shares/unregister',
      op(async (env, body) => {
        await offered().registry.unregister(env, String(body.token));
        return {};
      }),
    ],
    [
      '/tunnel/shares/sync',
      op(async (env, body) => {
        const { published, refused } = await offered().registry.sync(env, body.shares as ShareAnnouncement[]);
        return { shares: published.map(shareResponse), refused };
      }),
    ],
    [
      '/tunnel/shares/lookup',
      op((env, body) => {
        const entry = offered().registry.lookup(String(body.token));
        // A share of another account answers exactly like a missing one.
        if (!entry || entry.shareMode !== 'private' || entry.accountId !== env.accountId) {
          throw new SvcError('unknown_share', `there is no private share ${String(body.token)} of this account`, {
            status: 404,
          });
        }
        return Promise.resolve({ token: entry.token, shareMode: entry.shareMode, backendMode: entry.backendMode });
      }),
    ],
  ]);
}
