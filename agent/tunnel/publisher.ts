import { callApi } from '../../lib/api-client.ts';
import { SvcError } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { ShareRecord } from '../store.ts';

/** What `/api/v1/tunnel/info` tells an agent. */
export interface TunnelInfo {
  readonly tunnelUrl: string;
  readonly accessUrl: string;
  /** A share URL with `{token}` in place of the token. */
  readonly shareUrl: string;
  readonly providers: readonly string[];
}

/**
 * Where the agent's shares are published. Without one the agent's shares are served by its own
 * frontend (one machine, `svc serve`); with one they are registered at the installation's
 * controller and served by its public frontend through the tunnel.
 */
export interface SharePublisher {
  /** The identity providers a public share may name (the installation's). */
  readonly providerNames: readonly string[];
  frontendEndpoints(record: ShareRecord): string[];
  /** Registers a share before the agent reports it created; fails when the token is refused. */
  publish(record: ShareRecord): Promise<void>;
  withdraw(token: string): Promise<void>;
  /** Reconciles the registry with every share the agent holds; returns the tokens it refused. */
  sync(records: readonly ShareRecord[]): Promise<string[]>;
  /** A private share of another machine of the account; fails with `unknown_share` otherwise. */
  lookupPrivate(token: string): Promise<{ backendMode: string }>;
}

/** Asks the controller whether it offers tunnels: the info, or undefined (`tunnel_not_offered`). */
export async function fetchTunnelInfo(apiEndpoint: string, token: string): Promise<TunnelInfo | undefined> {
  try {
    const info = await callApi<TunnelInfo>(apiEndpoint, '/tunnel/info', token, {});
    // A path means the API host itself; http(s) becomes ws(s).
    const ws = (u: string) => {
      const url = new URL(u, apiEndpoint);
      if (url.protocol === 'https:' || url.protocol === 'http:')
        url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      return url.href;
    };
    return { ...info, tunnelUrl: ws(info.tunnelUrl), accessUrl: ws(info.accessUrl) };
  } catch (err) {
    if (err instanceof SvcError && err.code === 'tunnel_not_offered') return undefined;
    throw err;
  }
}

/** The share registry at the installation's controller, through its `/tunnel/shares/*` operations. */
export function installationPublisher(options: {
  apiEndpoint: string;
  token: string;
  info: TunnelInfo;
  logger: Logger;
}): SharePublisher {
  const { apiEndpoint, token, info, logger } = options;
  const call = <T>(path: string, body: unknown) => callApi<T>(apiEndpoint, path, token, body);
  return {
    providerNames: info.providers,
    frontendEndpoints: (record) =>
      record.shareMode === 'public' ? [info.shareUrl.replace('{token}', record.token)] : [],
    async publish(record) {
      await call('/tunnel/shares/register', announcement(record));
    },
    async withdraw(shareToken) {
      try {
        await call('/tunnel/shares/unregister', { token: shareToken });
      } catch (err) {
        if (!(err instanceof SvcError && err.code === 'unknown_share')) throw err;
      }
    },
    async sync(records) {
      const answer = await call<{ refused: { token: string; message: string }[] }>('/tunnel/shares/sync', {
        shares: records.map(announcement),
      });
      for (const r of answer.refused) {
        logger.error({ share: r.token, reason: r.message }, 'tunnel: the installation refused a share');
      }
      return answer.refused.map((r) => r.token);
    },
    async lookupPrivate(shareToken) {
      const found = await call<{ backendMode?: string }>('/tunnel/shares/lookup', { token: shareToken });
      return { backendMode: found.backendMode ?? 'proxy' };
    },
  };
}

function announcement(record: ShareRecord): Record<string, unknown> {
  return {
    token: record.token,
    shareMode: record.shareMode,
    backendMode: record.backendMode,
    ...(record.oauth
      ? {
          oauthProvider: record.oauth.provider,
          oauthEmailAddressPatterns: [...record.oauth.emailAddressPatterns],
          oauthCheckInterval: record.oauth.checkInterval,
        }
      : {}),
  };
}
