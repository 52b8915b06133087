import type { Logger } from '../lib/logger.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { Agent } from '../agent/agent.ts';
import { formatAddress } from '../lib/listen.ts';
import { ensureDataDir, resolveDataDir, socketPath } from '../lib/data-dir.ts';
import { startDevLogin } from './dev.ts';
import { FileStore } from '../agent/file-store.ts';
import { assertNotRunning, startLocalApi } from '../agent/local-api.ts';
import { loadServeConfig, type ServeConfig } from './config.ts';
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

/** What `svc serve` closes, latest first; every step adds what it started. */
class Cleanups {
  readonly #steps: (() => Promise<void>)[] = [];
  add(step: () => Promise<void>): void {
    this.#steps.push(step);
  }
  readonly close = async (): Promise<void> => {
    for (const step of this.#steps.splice(0).reverse()) await step().catch(() => undefined);
  };
}

/** The validated settings of one `svc serve`: its config with the flags applied, and where its state lives. */
interface ServePlan {
  readonly options: ServeOptions;
  readonly config: ServeConfig;
  readonly dataDir: string;
  readonly socket: string;
}

/**
 * `svc serve`: the single-machine service in one process: the agent (shares, their backends,
 * health checks) with its state in the data directory, the agent's local API for the CLI (a Unix
 * socket in the data directory), and the public frontend reading the agent's live share table.
 * With `--dev`, the bundled development identity provider and a ready `oauth` section too.
 * Steps: plan (validate) → dev provider → agent → frontend → local API and page → controller,
 * remoting and tunnel; anything started is closed again when a later step fails.
 */
export async function startServe(options: ServeOptions, logger: Logger): Promise<RunningServe> {
  const plan = await planServe(options, logger);
  const { config, dataDir } = plan;
  const cleanups = new Cleanups();
  try {
    const bound: { endpoint?: URL } = {};
    const dev = options.dev
      ? await startDevLogin(dataDir, config.frontend.listen, config.frontend.domain, () => bound.endpoint)
      : undefined;
    if (dev) cleanups.add(() => dev.close());
    const oauth = dev?.oauth ?? config.oauth;
    const { agent, inspector } = await startAgent(plan, oauth, logger);
    cleanups.add(() => agent.close());
    const { frontend, shareUrl: frontendUrl } = await startServeFrontend(plan, oauth, agent, logger);
    cleanups.add(() => frontend.close());
    bound.endpoint = frontend.endpointUrl;
    const ui = await startLocalSurfaces(plan, { agent, oauth, inspector, cleanups }, logger);
    const controller = await startRemoteParts(plan, agent, cleanups, logger);
    logger.info(
      {
        dataDir,
        frontend: formatAddress({ host: config.frontend.listen.host, port: frontend.port }),
        domain: config.frontend.domain,
        oauth: Boolean(oauth),
      },
      'svc serve ready',
    );
    return {
      dataDir,
      socketPath: plan.socket,
      frontendPort: frontend.port,
      frontendUrl,
      ...(dev ? { devLoginUrl: dev.loginUrl } : {}),
      ...(controller ? { controllerUrl: controller.apiUrl } : {}),
      ...(ui ? { pageUrl: ui.url } : {}),
      close: cleanups.close,
    };
  } catch (err) {
    await cleanups.close();
    throw err;
  }
}

/** Validates the config with the flags, prepares the data directory and refuses a second serve on it. */
async function planServe(options: ServeOptions, logger: Logger): Promise<ServePlan> {
  const config = loadServeConfig(options.config, options);
  const dataDir = resolveDataDir(options.dataDir, config.dataDir);
  ensureDataDir(dataDir, (message) => logger.warn(message));
  const socket = socketPath(dataDir);
  await assertNotRunning(socket);
  return { options, config, dataDir, socket };
}

/** The agent over the data directory's share table, with the request inspector when the page has one. */
async function startAgent(plan: ServePlan, oauth: OAuthConfig | undefined, logger: Logger) {
  const { ui } = plan.config;
  const inspector = ui.enabled && ui.inspector ? new InspectorStore(ui.inspector) : undefined;
  const ownCookie = oauth?.cookieName;
  const agent = new Agent({
    store: new FileStore(plan.dataDir),
    logger,
    providerNames: oauth?.providers.map((p) => p.name) ?? [],
    ...(inspector ? { inspector: { store: inspector, ...(ownCookie ? { ownCookie } : {}) } } : {}),
  });
  await agent.start();
  return { agent, inspector };
}

/** The public frontend over the agent's live share table; tells the agent its shares' public URLs. */
async function startServeFrontend(plan: ServePlan, oauth: OAuthConfig | undefined, agent: Agent, logger: Logger) {
  const { options, config } = plan;
  const { listen, domain } = config.frontend;
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
  const base = { protocol: frontend.endpointUrl.protocol, port: frontend.endpointUrl.port };
  const url = (token: string) => shareUrl(token, domain, base);
  agent.setPublicUrl(url);
  return { frontend, shareUrl: url };
}

/** The local API for the CLI and, unless `ui.enabled: false`, the agent's page. */
async function startLocalSurfaces(
  plan: ServePlan,
  parts: { agent: Agent; oauth: OAuthConfig | undefined; inspector: InspectorStore | undefined; cleanups: Cleanups },
  logger: Logger,
) {
  const { agent, inspector, cleanups } = parts;
  const api = await startLocalApi(agent, plan.socket, logger);
  cleanups.add(() => api.close());
  if (!plan.config.ui.enabled) return undefined;
  const ownCookie = parts.oauth?.cookieName;
  const ui = await startUi(plan.config.ui, {
    agent,
    providers: parts.oauth?.providers.map((p) => p.name) ?? [],
    logger,
    ...(inspector ? { inspector } : {}),
    ...(ownCookie ? { ownCookie } : {}),
  });
  cleanups.add(() => ui.close());
  return ui;
}

/**
 * The controller API (with a controller section), agent remoting, and the tunnel service: an
 * environment enabled at an installation that offers tunnels publishes through it (docs/controller.md).
 */
async function startRemoteParts(plan: ServePlan, agent: Agent, cleanups: Cleanups, logger: Logger) {
  const { dataDir, config } = plan;
  const controller = config.controller
    ? await (await import('../controller/start.ts')).startController({ ...config.controller, dataDir, logger })
    : undefined;
  if (controller) cleanups.add(() => controller.close());
  const remoting = startRemoting({ dataDir, executor: agentExecutor(agent), logger });
  cleanups.add(() => remoting.close());
  const tunnel = startTunnelService({ dataDir, agent, logger });
  cleanups.add(() => tunnel.close());
  return controller;
}
