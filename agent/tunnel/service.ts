import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay } from '../../lib/backoff.ts';
import { errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { ENVIRONMENT_FILE, readEnvironment, type EnvironmentFile } from '../../lib/remoting/files.ts';
import type { Agent } from '../agent.ts';
import { followDataFile } from '../data-file.ts';
import { startAccessClient, type RunningAccessClient } from './access-client.ts';
import { fetchTunnelInfo, installationPublisher } from './publisher.ts';
import { startTunnel, type RunningTunnel } from './tunnel-client.ts';
import { transportFromEnv } from './transport.ts';

export interface RunningTunnelService {
  /** True while the tunnel to the installation is connected. */
  readonly connected: boolean;
  close(): Promise<void>;
}

interface Current {
  readonly token: string;
  stopped: boolean;
  tunnel?: RunningTunnel;
  access?: RunningAccessClient;
}

/**
 * Publishing through the installation inside `svc serve`: while `environment.json` holds an
 * environment token and its controller offers tunnels (`/tunnel/info`), the agent's shares are
 * registered at the controller and served through an outbound tunnel to the installation's frontend;
 * on every reconnect they are reconciled with the registry. The file is watched, so `svc enable`
 * and `svc disable` take effect without a restart. A controller that offers no tunnel (the one in
 * `svc serve` itself) leaves the shares on this machine's frontend, with no network hop.
 */
export function startTunnelService(options: { dataDir: string; agent: Agent; logger: Logger }): RunningTunnelService {
  const { dataDir, agent, logger } = options;
  const transport = transportFromEnv();
  let current: Current | undefined;
  let warnedNoToken = false;

  const stop = async () => {
    if (!current) return;
    const state = current;
    current = undefined;
    state.stopped = true;
    await state.tunnel?.close();
    await state.access?.close();
    await agent.usePublisher(undefined);
  };

  const begin = async (env: EnvironmentFile, token: string) => {
    const state: Current = { token, stopped: false };
    current = state;
    for (let failures = 1; !state.stopped; failures++) {
      try {
        const info = await fetchTunnelInfo(env.apiEndpoint, token);
        if (!info) {
          logger.info(
            { controller: env.apiEndpoint },
            'tunnel: the controller offers no tunnel; shares stay on this machine',
          );
          return;
        }
        if (state.stopped) return;
        const publisher = installationPublisher({ apiEndpoint: env.apiEndpoint, token, info, logger });
        const access = startAccessClient({ url: info.accessUrl, token, logger, transport });
        state.access = access;
        const reconcile = () =>
          agent
            .usePublisher(publisher, () => access.target())
            .catch((err: unknown) => {
              logger.warn(
                { err: errorText(err) },
                'tunnel: cannot reconcile shares with the registry; next reconnect retries',
              );
            });
        await reconcile();
        if (state.stopped) {
          await access.close();
          return;
        }
        state.tunnel = startTunnel({
          url: info.tunnelUrl,
          token,
          logger,
          transport,
          resolve: (shareToken) => agent.tunnelShare(shareToken),
          onConnected: () => void reconcile(),
        });
        logger.info(
          { envZId: env.envZId, tunnel: info.tunnelUrl },
          'tunnel: publishing shares through the installation',
        );
        return;
      } catch (err) {
        const delay = backoffDelay({ baseMs: 1000, maxMs: 30_000 }, failures);
        logger.warn({ err: errorText(err), delayMs: delay }, 'tunnel: cannot reach the controller; retrying');
        await sleep(delay);
      }
    }
  };

  const source = { dataDir, file: ENVIRONMENT_FILE, read: readEnvironment };
  const followed = followDataFile(source, 'tunnel', logger, async (env) => {
    const token = env?.environmentToken;
    if (env && !token && !warnedNoToken) {
      warnedNoToken = true;
      logger.warn(
        'tunnel: this environment was enabled before tunnels existed; run svc disable and svc enable to publish through the installation',
      );
    }
    if (current && current.token === token) return;
    await stop();
    // Not awaited: the first connection may take retries; a later change of the file stops it.
    if (env && token) void begin(env, token);
  });
  return {
    get connected() {
      return current?.tunnel?.connected ?? false;
    },
    close: async () => {
      await followed.close();
      await stop();
    },
  };
}
