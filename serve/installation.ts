import { resolveDataDir } from '../lib/data-dir.ts';
import { parseListenAddress, type ListenAddress } from '../lib/listen.ts';
import { badInput } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { ACCESS_PATH, DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, shareUrl } from '../lib/tunnel/protocol.ts';
import { ControllerFileStore } from '../controller/file-store.ts';
import { startController, type RunningController } from '../controller/start.ts';
import { ShareRegistry, quarantineFor } from '../controller/share-registry.ts';
import type { RunningFrontend } from '../sidecar/frontend.ts';
import { startTunnelFrontend, type RunningTunnelFrontend } from '../sidecar/tunnel/public-frontend.ts';
import { loadServeConfig, type ServeConfig } from './config.ts';
import { ConfigReader } from '../lib/config-reader.ts';
import { readConsoleConfig } from '../controller/console/config.ts';
import { consoleProviders, consoleSealer } from './console-sign-in.ts';
import { ShareTraffic } from '../lib/share/traffic.ts';
import { EnvironmentPresence } from '../lib/tunnel/presence.ts';
import { DEV_PROVIDER, startDevLogin } from './dev.ts';

export interface InstallationOptions {
  /** The config file (`svc serve` format), or its content already validated by the caller. */
  readonly config: string | { readonly path: string; readonly parsed: ServeConfig };
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

/** The validated settings of one installation: its config with the flags applied. */
interface InstallationPlan {
  readonly config: ServeConfig & { readonly controller: NonNullable<ServeConfig['controller']> };
  readonly listen: ListenAddress;
  readonly dataDir: string;
}

/** The parts both halves share: the share registry, what the console shows, where each half listens. */
interface SharedParts {
  readonly oauth: OAuthConfig | undefined;
  readonly registry: ShareRegistry;
  readonly traffic: ShareTraffic;
  readonly presence: EnvironmentPresence;
  readonly bound: { endpoint?: URL; api?: URL };
  readonly dev: boolean;
}

/**
 * The installation on one machine (`svc controller --config installation.yaml` with a `frontend` or
 * `oauth` section): the controller API and the public frontend that serves every environment's
 * shares through their tunnels, in one process. The frontend reads the controller's share registry
 * directly and accepts the agents' tunnels on its endpoint host (`/api/v1/tunnel`); agents learn
 * that URL from `/api/v1/tunnel/info`. Config is the `svc serve` format (docs/controller.md).
 * Steps: plan (validate) → dev provider → share registry → frontend → controller; a failed step
 * closes what the earlier ones started.
 */
export async function startInstallation(options: InstallationOptions, logger: Logger): Promise<RunningInstallation> {
  const plan = planInstallation(options);
  const store = new ControllerFileStore(plan.dataDir);
  const bound: SharedParts['bound'] = {};
  const dev = options.dev ? await startDevProvider(plan, bound) : undefined;
  try {
    if (dev && plan.config.oauth)
      throw badInput('--dev brings its own oauth section: remove oauth from the config file or drop --dev');
    const oauth = dev?.oauth ?? plan.config.oauth;
    const registry = await ShareRegistry.open(store, oauth?.providers.map((p) => p.name) ?? [], logger, {
      quarantineMs: quarantineFor(oauth?.sessionLifetimeMs),
    });
    const parts: SharedParts = {
      oauth,
      registry,
      traffic: new ShareTraffic(),
      presence: new EnvironmentPresence(),
      bound,
      dev: dev !== undefined,
    };
    const tunnelFrontend = await startFrontendHalf(plan, parts, logger);
    const controller = await startControllerHalf(plan, parts, tunnelFrontend, store, logger).catch(async (err) => {
      await tunnelFrontend.close();
      throw err;
    });
    const { frontend } = tunnelFrontend;
    logger.info({ frontend: frontend.endpointUrl.origin, api: controller.apiUrl }, 'installation ready');
    return {
      controller,
      frontend,
      close: async () => {
        await tunnelFrontend.close();
        await controller.close();
        await dev?.close();
      },
    };
  } catch (err) {
    await dev?.close();
    throw err;
  }
}

/** The config (read here unless the caller validated it) with `--listen` and `--data-dir` applied. */
function planInstallation(options: InstallationOptions): InstallationPlan {
  const { path, parsed } =
    typeof options.config === 'string'
      ? { path: options.config, parsed: loadServeConfig(options.config) }
      : options.config;
  const { controller } = parsed;
  if (!controller) throw badInput(`${path}: an installation needs a controller section`);
  const listen = options.listen ? parseListenAddress(options.listen) : controller.settings.listen;
  if (!listen) throw badInput(`--listen: must be ip:port, got ${JSON.stringify(options.listen)}`);
  return { config: { ...parsed, controller }, listen, dataDir: resolveDataDir(options.dataDir, parsed.dataDir) };
}

/** `--dev`: the development identity provider, redirecting to the frontend and the console once they listen. */
function startDevProvider(plan: InstallationPlan, bound: SharedParts['bound']) {
  const { config } = plan;
  return startDevLogin(
    plan.dataDir,
    config.frontend.listen,
    config.frontend.domain,
    () => bound.endpoint,
    () => {
      const origin = config.console?.publicUrl ?? bound.api;
      return origin && new URL(`/console/oauth/${DEV_PROVIDER}/callback`, origin).href;
    },
  );
}

/** The public frontend for tunnelled shares, reading the registry in this process. */
async function startFrontendHalf(plan: InstallationPlan, parts: SharedParts, logger: Logger) {
  const { config } = plan;
  const { domain } = config.frontend;
  const running = await startTunnelFrontend({
    traffic: parts.traffic,
    presence: parts.presence,
    directory: parts.registry,
    limits: config.tunnel ?? DEFAULT_TUNNEL_LIMITS,
    listen: config.frontend.listen,
    endpointUrl:
      config.frontend.endpointUrl && !parts.dev
        ? config.frontend.endpointUrl
        : (port) => new URL(`http://${parts.dev ? `auth.${domain}` : domain}:${port}`),
    domain,
    ...(parts.oauth ? { oauth: parts.oauth } : {}),
    ...(config.frontend.metricsListen ? { metricsListen: config.frontend.metricsListen } : {}),
    logger,
  });
  parts.bound.endpoint = running.frontend.endpointUrl;
  return running;
}

/** The controller API with the console, offering agents the tunnel endpoint of the frontend half. */
async function startControllerHalf(
  plan: InstallationPlan,
  parts: SharedParts,
  tunnelFrontend: RunningTunnelFrontend,
  store: ControllerFileStore,
  logger: Logger,
): Promise<RunningController> {
  const { config } = plan;
  const { frontend, endpoint } = tunnelFrontend;
  const base = { protocol: frontend.endpointUrl.protocol, port: frontend.endpointUrl.port };
  const controller = await startController({
    settings: { ...config.controller.settings, listen: plan.listen },
    ...(config.controller.agentController ? { agentController: config.controller.agentController } : {}),
    store,
    logger,
    console: {
      config: config.console ?? readConsoleConfig(new ConfigReader(), undefined),
      sealer: consoleSealer(parts.oauth),
      ...(parts.oauth ? { providers: consoleProviders(parts.oauth) } : {}),
      traffic: parts.traffic,
      presence: parts.presence,
      // One process holds every tunnel: the installation is its only frontend replica.
      replicas: () =>
        Promise.resolve([{ name: `this process (${frontend.endpointUrl.host})`, environments: endpoint.connected() }]),
    },
    tunnel: {
      registry: parts.registry,
      // Relative: the agent dials the host it already reaches, the API's. The frontend's endpoint
      // host accepts tunnels too (for an Ingress that routes only the public host).
      offer: {
        tunnelUrl: TUNNEL_PATH,
        accessUrl: ACCESS_PATH,
        shareUrl: (token) => shareUrl(token, config.frontend.domain, base),
      },
      onUpgrade: (req, socket, head) => endpoint.handleUpgrade(req, socket, head),
    },
  });
  parts.bound.api = new URL(controller.apiUrl);
  return controller;
}
