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
  const service = new TunnelService(options.agent, options.logger);
  const source = { dataDir: options.dataDir, file: ENVIRONMENT_FILE, read: readEnvironment };
  const followed = followDataFile(source, 'tunnel', options.logger, (env) => service.follow(env));
  return {
    get connected() {
      return service.connected;
    },
    close: async () => {
      await followed.close();
      await service.stop();
    },
  };
}

/** The tunnel of the environment `environment.json` names now, replaced when the file changes. */
class TunnelService {
  private readonly agent: Agent;
  private readonly logger: Logger;
  private readonly transport = transportFromEnv();
  private current: Current | undefined;
  private warnedNoToken = false;

  constructor(agent: Agent, logger: Logger) {
    this.agent = agent;
    this.logger = logger;
  }

  get connected(): boolean {
    return this.current?.tunnel?.connected ?? false;
  }

  /** A new content of `environment.json` (undefined: none): keeps, replaces or stops the tunnel. */
  async follow(env: EnvironmentFile | undefined): Promise<void> {
    const token = env?.environmentToken;
    if (env && !token && !this.warnedNoToken) {
      this.warnedNoToken = true;
      this.logger.warn(
        'tunnel: this environment was enabled before tunnels existed; run svc disable and svc enable to publish through the installation',
      );
    }
    if (this.current && this.current.token === token) return;
    await this.stop();
    // Not awaited: the first connection may take retries; a later change of the file stops it.
    if (env && token) {
      this.agent.expectPublisher();
      void this.begin(env, token);
    }
  }

  async stop(): Promise<void> {
    if (!this.current) return;
    const state = this.current;
    this.current = undefined;
    state.stopped = true;
    await state.tunnel?.close();
    await state.access?.close();
    await this.agent.usePublisher(undefined);
  }

  /** Connects, retrying with backoff while the controller cannot be reached, until done or stopped. */
  private async begin(env: EnvironmentFile, token: string): Promise<void> {
    const state: Current = { token, stopped: false };
    this.current = state;
    for (let failures = 1; !state.stopped; failures++) {
      try {
        await this.connect(env, state);
        return;
      } catch (err) {
        if (failures === 1) this.agent.publisherDelayed();
        const delay = backoffDelay({ baseMs: 1000, maxMs: 30_000 }, failures);
        this.logger.warn({ err: errorText(err), delayMs: delay }, 'tunnel: cannot reach the controller; retrying');
        await sleep(delay);
      }
    }
  }

  /** One attempt: the controller's tunnel offer, the share registry reconciled, then the tunnel itself. */
  private async connect(env: EnvironmentFile, state: Current): Promise<void> {
    const { token } = state;
    const info = await fetchTunnelInfo(env.apiEndpoint, token);
    if (!info) {
      this.logger.info(
        { controller: env.apiEndpoint },
        'tunnel: the controller offers no tunnel; shares stay on this machine',
      );
      await this.agent.usePublisher(undefined);
      return;
    }
    if (state.stopped) return;
    const publisher = installationPublisher({ apiEndpoint: env.apiEndpoint, token, info, logger: this.logger });
    const access = startAccessClient({ url: info.accessUrl, token, logger: this.logger, transport: this.transport });
    state.access = access;
    const reconcile = () =>
      this.agent
        .usePublisher(publisher, () => access.target())
        .catch((err: unknown) => {
          this.logger.warn(
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
      logger: this.logger,
      transport: this.transport,
      resolve: (shareToken) => this.agent.tunnelShare(shareToken),
      onConnected: () => void reconcile(),
    });
    this.logger.info(
      { envZId: env.envZId, tunnel: info.tunnelUrl },
      'tunnel: publishing shares through the installation',
    );
  }
}
