import { untilSignal } from '../lib/signals.ts';
import { resolveDataDir } from '../lib/data-dir.ts';
import { parseListenAddress } from '../lib/listen.ts';
import { badInput } from '../lib/errors.ts';
import { createLogger, type Logger } from '../lib/logger.ts';
import { ACCESS_PATH, DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, tunnelUrl } from '../lib/tunnel/protocol.ts';
import { ControllerFileStore } from '../controller/file-store.ts';
import { startController, type RunningController } from '../controller/main.ts';
import { ShareRegistry } from '../controller/share-registry.ts';
import { startFrontend, type RunningFrontend } from '../sidecar/frontend.ts';
import { TunnelEndpoint } from '../sidecar/tunnel/endpoint.ts';
import { LocalTunnels } from '../sidecar/tunnel/locator.ts';
import { tunnelledShares } from '../sidecar/tunnel/routes.ts';
import { loadServeConfig, shareUrl } from './config.ts';

export interface InstallationOptions {
  readonly config: string;
  readonly dataDir?: string;
  /** Overrides `controller.listen`. */
  readonly listen?: string;
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
  const limits = DEFAULT_TUNNEL_LIMITS;
  const registry = await ShareRegistry.open(store, config.oauth?.providers.map((p) => p.name) ?? [], logger);
  const locator = new LocalTunnels(limits.maxTunnelsPerEnvironment);
  const endpoint = new TunnelEndpoint({ directory: registry, locator, limits, logger });
  const { domain } = config.frontend;
  const frontend = await startFrontend({
    listen: config.frontend.listen,
    endpointUrl: config.frontend.endpointUrl ?? ((port) => new URL(`http://${domain}:${port}`)),
    domain,
    ...(config.oauth ? { oauth: config.oauth } : {}),
    shares: tunnelledShares({ directory: registry, locator, limits, logger }),
    logger,
    onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
    ...(config.frontend.metricsListen ? { metricsListen: config.frontend.metricsListen } : {}),
  });
  const base = { protocol: frontend.endpointUrl.protocol, port: frontend.endpointUrl.port };
  let controller: RunningController;
  try {
    controller = await startController({
      settings: { ...config.controller.settings, listen },
      ...(config.controller.agentController ? { agentController: config.controller.agentController } : {}),
      store,
      logger,
      tunnel: {
        registry,
        offer: {
          tunnelUrl: tunnelUrl(frontend.endpointUrl, TUNNEL_PATH),
          accessUrl: tunnelUrl(frontend.endpointUrl, ACCESS_PATH),
          shareUrl: (token) => shareUrl(token, domain, base),
        },
      },
    });
  } catch (err) {
    endpoint.close();
    await frontend.close();
    throw err;
  }
  logger.info({ frontend: frontend.endpointUrl.origin, api: controller.apiUrl }, 'installation ready');
  return {
    controller,
    frontend,
    close: async () => {
      endpoint.close();
      await frontend.close();
      await controller.close();
    },
  };
}

/** Runs the installation until SIGINT/SIGTERM; prints where everything is once ready. */
export async function runInstallation(options: InstallationOptions): Promise<void> {
  const logger = createLogger('svc-installation');
  const running = await startInstallation(options, logger);
  const endpoint = running.frontend.endpointUrl;
  process.stdout.write(
    [
      'svc controller is ready (installation: controller + public frontend for tunnels)',
      `  api:       ${running.controller.apiUrl}`,
      `  frontend:  listening on port ${running.frontend.port}; endpoint ${endpoint.origin}`,
      `  tunnels:   ${tunnelUrl(endpoint, TUNNEL_PATH)}`,
      '',
    ].join('\n'),
  );
  await untilSignal();
  await running.close();
}
