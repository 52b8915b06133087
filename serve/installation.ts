import { untilSignal } from '../lib/signals.ts';
import { resolveDataDir } from '../lib/data-dir.ts';
import { parseListenAddress } from '../lib/listen.ts';
import { badInput } from '../lib/errors.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import { ACCESS_PATH, DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, shareUrl, tunnelUrl } from '../lib/tunnel/protocol.ts';
import { ControllerFileStore } from '../controller/file-store.ts';
import { startController, type RunningController } from '../controller/main.ts';
import { ShareRegistry, quarantineFor } from '../controller/share-registry.ts';
import type { RunningFrontend } from '../sidecar/frontend.ts';
import { startTunnelFrontend } from '../sidecar/tunnel/public-frontend.ts';
import { loadServeConfig } from './config.ts';
import { ConfigReader } from '../lib/config-reader.ts';
import { readConsoleConfig } from '../controller/console/config.ts';
import { consoleProviders, consoleSealer } from './console-sign-in.ts';
import { ShareTraffic } from '../lib/share/traffic.ts';
import { EnvironmentPresence } from '../lib/tunnel/presence.ts';
import { DEV_PROVIDER, startDevLogin } from './dev.ts';

export interface InstallationOptions {
  readonly config: string;
  readonly dataDir?: string;
  /** Overrides `controller.listen`. */
  readonly listen?: string;
  /** The bundled development identity provider and a ready `oauth` section (never for production). */
  readonly dev?: boolean;
}

export interface RunningInstallation {
  readonly controller: RunningController;
  readonly frontend: RunningFrontend;
  close(): Promise<void>;
}

/**
 * The installation on one machine (`svc controller --config installation.yaml` with a `frontend` or
 * `oauth` section): the controller API and the public frontend that serves every environment's
 * shares through their tunnels, in one process. The frontend reads the controller's share registry
 * directly and accepts the agents' tunnels on its endpoint host (`/api/v1/tunnel`); agents learn
 * that URL from `/api/v1/tunnel/info`. Config is the `svc serve` format (docs/controller.md).
 */
export async function startInstallation(options: InstallationOptions, logger: Logger): Promise<RunningInstallation> {
  const config = loadServeConfig(options.config);
  if (!config.controller) throw badInput(`${options.config}: an installation needs a controller section`);
  const listen = options.listen ? parseListenAddress(options.listen) : config.controller.settings.listen;
  if (!listen) throw badInput(`--listen: must be ip:port, got ${JSON.stringify(options.listen)}`);
  const dataDir = resolveDataDir(options.dataDir, config.dataDir);
  const store = new ControllerFileStore(dataDir);
  const { domain } = config.frontend;
  const bound: { endpoint?: URL; api?: URL } = {};
  let oauth = config.oauth;
  const dev = options.dev
    ? await startDevLogin(
        dataDir,
        config.frontend.listen,
        domain,
        () => bound.endpoint,
        () => {
          const origin = config.console?.publicUrl ?? bound.api;
          return origin && new URL(`/console/oauth/${DEV_PROVIDER}/callback`, origin).href;
        },
      )
    : undefined;
  if (dev) {
    if (oauth) throw badInput('--dev brings its own oauth section: remove oauth from the config file or drop --dev');
    oauth = dev.oauth;
  }
  const registry = await ShareRegistry.open(store, oauth?.providers.map((p) => p.name) ?? [], logger, {
    quarantineMs: quarantineFor(oauth?.sessionLifetimeMs),
  });
  const traffic = new ShareTraffic();
  const presence = new EnvironmentPresence();
  const tunnelFrontend = await startTunnelFrontend({
    traffic,
    presence,
    directory: registry,
    limits: config.tunnel ?? DEFAULT_TUNNEL_LIMITS,
    listen: config.frontend.listen,
    endpointUrl:
      config.frontend.endpointUrl && !dev
        ? config.frontend.endpointUrl
        : (port) => new URL(`http://${dev ? `auth.${domain}` : domain}:${port}`),
    domain,
    ...(oauth ? { oauth } : {}),
    ...(config.frontend.metricsListen ? { metricsListen: config.frontend.metricsListen } : {}),
    logger,
  });
  const { frontend, endpoint } = tunnelFrontend;
  const closeFrontend = () => tunnelFrontend.close();
  bound.endpoint = frontend.endpointUrl;
  const base = { protocol: frontend.endpointUrl.protocol, port: frontend.endpointUrl.port };
  let controller: RunningController;
  try {
    controller = await startController({
      settings: { ...config.controller.settings, listen },
      ...(config.controller.agentController ? { agentController: config.controller.agentController } : {}),
      store,
      logger,
      console: {
        config: config.console ?? readConsoleConfig(new ConfigReader(), undefined),
        sealer: consoleSealer(oauth),
        ...(oauth ? { providers: consoleProviders(oauth) } : {}),
        traffic,
        presence,
        // One process holds every tunnel: the installation is its only frontend replica.
        replicas: () =>
          Promise.resolve([
            { name: `this process (${frontend.endpointUrl.host})`, environments: endpoint.connected() },
          ]),
      },
      tunnel: {
        registry,
        // Relative: the agent dials the host it already reaches, the API's. The frontend's endpoint
        // host accepts tunnels too (for an Ingress that routes only the public host).
        offer: { tunnelUrl: TUNNEL_PATH, accessUrl: ACCESS_PATH, shareUrl: (token) => shareUrl(token, domain, base) },
        onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
      },
    });
  } catch (err) {
    await closeFrontend();
    await dev?.close();
    throw err;
  }
  bound.api = new URL(controller.apiUrl);
  logger.info({ frontend: frontend.endpointUrl.origin, api: controller.apiUrl }, 'installation ready');
  return {
    controller,
    frontend,
    close: async () => {
      await closeFrontend();
      await controller.close();
      await dev?.close();
    },
  };
}

/** Runs the installation until SIGINT/SIGTERM; prints where everything is once ready. */
export async function runInstallation(options: InstallationOptions): Promise<void> {
  const stopped = untilSignal();
  const logger = createLogger('svc-installation');
  const running = await startInstallation(options, logger);
  const endpoint = running.frontend.endpointUrl;
  process.stdout.write(
    [
      'svc controller is ready (installation: controller + public frontend for tunnels)',
      `  api:       ${running.controller.apiUrl}`,
      running.controller.agentsLine,
      `  frontend:  listening on port ${running.frontend.port}; endpoint ${endpoint.origin}`,
      `  tunnels:   ${tunnelUrl(running.controller.apiUrl, TUNNEL_PATH)} and ${tunnelUrl(endpoint, TUNNEL_PATH)}`,
      `  console:   ${new URL('/console', running.controller.apiUrl).href}`,
      '',
    ].join('\n'),
  );
  await stopped;
  await running.close();
}
