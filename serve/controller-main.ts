import { untilSignal } from '../lib/signals.ts';
import { ensureDataDir, resolveDataDir } from '../lib/data-dir.ts';
import { loadYamlFile } from '../lib/config-reader.ts';
import { badInput } from '../lib/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { TUNNEL_PATH, tunnelUrl } from '../lib/tunnel/protocol.ts';
import { parseControllerConfig, type ControllerConfigFile } from '../controller/config.ts';
import type { ConsoleConfig } from '../controller/console/config.ts';
import { ControllerFileStore } from '../controller/file-store.ts';
import { publicFrontendTunnel } from '../controller/public-frontend.ts';
import { openStore, startController } from '../controller/start.ts';
import { parseServeConfig } from './config.ts';
import { consoleProviders, consoleSealer } from './console-sign-in.ts';
import { startInstallation } from './installation.ts';

/** The flags of `svc controller`. */
export interface ControllerCommandOptions {
  readonly config?: string;
  readonly dataDir?: string;
  readonly listen?: string;
  readonly store?: string;
  readonly namespace?: string;
  readonly dev?: boolean;
}

/**
 * `svc controller [--config <file>] [--data-dir D] [--listen ip:port] [--store file|kubernetes
 * [--namespace N]] [--dev]` until SIGINT/SIGTERM. The config file is read once: with a `frontend`
 * or `oauth` section it describes the installation (controller + public frontend for tunnels in
 * this process, serve/installation.ts, `svc serve` format); otherwise the controller alone
 * (controller/config.ts format). The main lives in serve/ because the installation composes the
 * controller with the sidecar's tunnel frontend, which controller/ may not import.
 */
export async function runController(options: ControllerCommandOptions): Promise<void> {
  const doc = options.config === undefined ? {} : (loadYamlFile(options.config) ?? {});
  if (options.config !== undefined && servesTunnels(doc)) {
    if (options.store !== undefined && options.store !== 'file')
      throw badInput('--store: an installation with a public frontend keeps its share registry in the file store');
    return runInstallation(options, { path: options.config, doc });
  }
  return runControllerAlone(options, parseControllerConfig(doc, options, options.config));
}

/** A config with a `frontend` or `oauth` section describes the installation. */
function servesTunnels(doc: unknown): boolean {
  return Boolean(doc && typeof doc === 'object' && ('frontend' in doc || 'oauth' in doc));
}

/**
 * The controller alone. `--store kubernetes` keeps accounts, environments and enrollments as
 * Secrets in namespace N (default: the pod's own namespace) through the in-cluster service account
 * or KUBECONFIG (controller/kube-store.ts); `public_frontend` serves tunnels to `svc public-frontend`
 * replicas (controller/public-frontend.ts).
 */
async function runControllerAlone(options: ControllerCommandOptions, config: ControllerConfigFile): Promise<void> {
  const stopped = untilSignal();
  const logger = createLogger('svc-controller');
  const dataDir = resolveDataDir(options.dataDir, config.dataDir);
  const kube = await openStore(config.store);
  if (!kube) ensureDataDir(dataDir, (message) => logger.warn(message));
  const store = kube ?? new ControllerFileStore(dataDir);
  const { publicFrontend } = config;
  const running = await startController({
    settings: config.controller,
    ...(config.agentController ? { agentController: config.agentController } : {}),
    store,
    logger,
    ...(publicFrontend ? { tunnel: await publicFrontendTunnel(store, publicFrontend, logger) } : {}),
    console: consoleOptions(config.console),
  });
  const where =
    config.store.kind === 'kubernetes'
      ? `  store:     kubernetes, namespace ${config.store.namespace}`
      : `  data dir:  ${dataDir}`;
  const frontend = publicFrontend
    ? `  frontend:  ${publicFrontend.endpointUrl.origin} (public_frontend; shares at <token>.${publicFrontend.domain})\n`
    : '';
  process.stdout.write(
    `svc controller is ready\n  api:       ${running.apiUrl}\n${running.agentsLine}\n  openapi:   ${running.apiUrl}/openapi.json\n  console:   ${new URL('/console', config.console.publicUrl ?? running.apiUrl).href}\n${where}\n${frontend}`,
  );
  await stopped;
  await running.close();
}

/**
 * The console's sign-in: with `console.oauth`, its providers and cookies sealed under its keys;
 * without, account tokens only and keys random per start.
 */
function consoleOptions(config: ConsoleConfig) {
  const { oauth } = config;
  return { config, sealer: consoleSealer(oauth), ...(oauth ? { providers: consoleProviders(oauth) } : {}) };
}

/** The installation until SIGINT/SIGTERM; prints where everything is once ready. */
async function runInstallation(
  options: ControllerCommandOptions,
  file: { readonly path: string; readonly doc: unknown },
): Promise<void> {
  const parsed = parseServeConfig(file.doc, {}, file.path);
  const stopped = untilSignal();
  const logger = createLogger('svc-installation');
  const running = await startInstallation({ ...options, config: { path: file.path, parsed } }, logger);
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
