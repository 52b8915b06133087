import { untilSignal } from '../lib/signals.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { Agent } from '../agent/agent.ts';
import { formatAddress } from '../lib/listen.ts';
import { ensureDataDir, resolveDataDir, socketPath } from '../lib/data-dir.ts';
import { startDevLogin } from './dev.ts';
import { FileStore } from '../agent/file-store.ts';
import { assertNotRunning, startLocalApi } from '../agent/local-api.ts';
import { loadServeConfig } from './config.ts';
import { shareUrl } from '../lib/tunnel/protocol.ts';
import { agentExecutor } from '../agent/remoting/executor.ts';
import { startRemoting } from '../agent/remoting/service.ts';
import { startTunnelService } from '../agent/tunnel/service.ts';
import { InspectorStore } from '../agent/inspector/store.ts';
import { startUi } from './ui.ts';

export interface ServeOptions {
  readonly config?: string;
  readonly dev?: boolean;
  readonly dataDir?: string;
  /** Overrides the frontend listen address (`--listen`). */
  readonly listen?: string;
}

export interface RunningServe {
  readonly dataDir: string;
  readonly socketPath: string;
  readonly frontendPort: number;
  readonly frontendUrl: (token: string) => string;
  readonly devLoginUrl?: string;
  /** `http://host:port/api/v1` when the serve config has a controller section. */
  readonly controllerUrl?: string;
  /** The agent's page with its per-start key (`ui.enabled: false`: none). */
  readonly pageUrl?: string;
  close(): Promise<void>;
}

/**
 * `svc serve`: the single-machine service in one process: the agent (shares, their backends,
 * health checks) with its state in the data directory, the agent's local API for the CLI (a Unix
 * socket in the data directory), and the public frontend reading the agent's live share table.
 * With `--dev`, the bundled development identity provider and a ready `oauth` section too.
 * Parse config -> validate -> build -> start; anything started is closed again when a later step fails.
 */
export async function startServe(options: ServeOptions, logger: Logger): Promise<RunningServe> {
  const config = loadServeConfig(options.config, options);
  const dataDir = resolveDataDir(options.dataDir, config.dataDir);
  ensureDataDir(dataDir, (message) => logger.warn(message));
  const socket = socketPath(dataDir);
  await assertNotRunning(socket);
  const listen = config.frontend.listen;
  const domain = config.frontend.domain;

  const cleanups: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  };
  try {
    let oauth: OAuthConfig | undefined = config.oauth;
    let devLoginUrl: string | undefined;
    const bound: { endpoint?: URL } = {};
    if (options.dev) {
      const dev = await startDevLogin(dataDir, listen, domain, () => bound.endpoint);
      cleanups.push(() => dev.close());
      oauth = dev.oauth;
      devLoginUrl = dev.loginUrl;
    }

    const store = new FileStore(dataDir);
    const providerNames = oauth?.providers.map((p) => p.name) ?? [];
    const inspector = config.ui.enabled && config.ui.inspector ? new InspectorStore(config.ui.inspector) : undefined;
    const ownCookie = oauth?.cookieName;
    const agent = new Agent({
      store,
      logger,
      providerNames,
      ...(inspector ? { inspector: { store: inspector, ...(ownCookie ? { ownCookie } : {}) } } : {}),
    });
    await agent.start();
    cleanups.push(() => agent.close());

    const configured = oauth?.endpointUrl ?? config.frontend.endpointUrl;
    const { startFrontend } = await import('../sidecar/frontend.ts');
    const frontend = await startFrontend({
      listen,
      // Without a configured URL (or in --dev with port 0) the public URL names the bound port.
      endpointUrl:
        configured && !(options.dev && listen.port === 0)
          ? configured
          : (port) => new URL(`http://${options.dev ? `auth.${domain}` : domain}:${port}`),
      domain,
      ...(oauth ? { oauth } : {}),
      shares: agent.shareSource(),
      logger,
      ...(config.frontend.metricsListen ? { metricsListen: config.frontend.metricsListen } : {}),
    });
    cleanups.push(() => frontend.close());
    bound.endpoint = frontend.endpointUrl;
    const base = { protocol: frontend.endpointUrl.protocol, port: frontend.endpointUrl.port };
    const frontendUrl = (token: string) => shareUrl(token, domain, base);
    agent.setPublicUrl(frontendUrl);

    const api = await startLocalApi(agent, socket, logger);
    cleanups.push(() => api.close());
    const ui = config.ui.enabled
      ? await startUi(config.ui, {
          agent,
          providers: providerNames,
          logger,
          ...(inspector ? { inspector } : {}),
          ...(ownCookie ? { ownCookie } : {}),
        })
      : undefined;
    if (ui) cleanups.push(() => ui.close());
    // Controller API and agent remoting (docs/controller.md).
    const controller = config.controller
      ? await (await import('../controller/main.ts')).startController({ ...config.controller, dataDir, logger })
      : undefined;
    if (controller) cleanups.push(() => controller.close());
    const remoting = startRemoting({ dataDir, executor: agentExecutor(agent), logger });
    cleanups.push(() => remoting.close());
    // An environment enabled at an installation that offers tunnels publishes through it (docs/design.md).
    const tunnel = startTunnelService({ dataDir, agent, logger });
    cleanups.push(() => tunnel.close());
    logger.info(
      {
        dataDir,
        frontend: formatAddress({ host: listen.host, port: frontend.port }),
        domain,
        oauth: Boolean(oauth),
      },
      'svc serve ready',
    );
    return {
      dataDir,
      socketPath: socket,
      frontendPort: frontend.port,
      frontendUrl,
      ...(devLoginUrl ? { devLoginUrl } : {}),
      ...(controller ? { controllerUrl: controller.apiUrl } : {}),
      ...(ui ? { pageUrl: ui.url } : {}),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Runs `svc serve` until SIGINT/SIGTERM; prints where everything is to stdout once ready. */
export async function runServe(options: ServeOptions): Promise<void> {
  const stopped = untilSignal();
  const logger = createLogger('svc-serve');
  const running = await startServe(options, logger);
  const lines = [
    'svc serve is ready',
    ...(running.pageUrl ? [`  page:      ${running.pageUrl}  (shares, accesses, request inspector)`] : []),
    `  frontend:  listening on port ${running.frontendPort}; shares at ${running.frontendUrl('token').replace('//token.', '//<token>.')}`,
    `  local API: unix:${running.socketPath}`,
    ...(running.controllerUrl ? [`  controller: ${running.controllerUrl}`] : []),
    `  data dir:  ${running.dataDir}`,
    ...(running.devLoginUrl ? [`  dev login: provider "dev" at ${running.devLoginUrl} (any email address)`] : []),
    '  next:      svc share public http://127.0.0.1:3000',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  await stopped;
  logger.info('svc serve stopping');
  await running.close();
}
