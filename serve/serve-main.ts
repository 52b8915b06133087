import { untilSignal } from '../lib/signals.ts';
import { createLogger } from '../lib/logger.ts';
import { loadServeConfig } from './config.ts';
import { startServe, type ServeOptions } from './serve.ts';

/** The flags of `svc serve`. */
export interface ServeCommandOptions extends ServeOptions {
  /** Validate the configuration with these flags, print a summary and exit. */
  readonly check?: boolean;
}

/**
 * `svc serve [--config svc.yaml] [--dev] [--check]`: the single-machine service (docs/agent.md),
 * serve/serve.ts `startServe`, until SIGINT/SIGTERM; prints where everything is once ready.
 */
export async function runServe(options: ServeCommandOptions): Promise<void> {
  if (options.check) return checkServe(options);
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

/** `--check`: validates the configuration with the flags and prints a summary. */
function checkServe(options: ServeCommandOptions): void {
  const config = loadServeConfig(options.config, options);
  const { host, port } = config.frontend.listen;
  process.stdout.write(
    `${options.config ?? '(defaults)'}: valid (frontend ${host}:${port}, shares at <token>.${config.frontend.domain}, ${config.oauth ? `${config.oauth.providers.length} provider(s)` : 'no OAuth'})\n`,
  );
}
