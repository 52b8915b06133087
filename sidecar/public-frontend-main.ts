import { formatAddress } from '../lib/listen.ts';
import { REPORT_INTERVAL_MS } from '../lib/tunnel/frontend-api.ts';
import { createLogger } from '../lib/logger.ts';
import { untilSignal } from '../lib/signals.ts';
import { loadPublicFrontendConfig } from './tunnel/public-frontend-config.ts';
import { startPublicFrontend } from './tunnel/public-frontend.ts';

/**
 * `svc public-frontend`: parse config → validate (every problem at once; `--check` stops there) →
 * start → serve until SIGINT/SIGTERM.
 */
export async function runPublicFrontend(options: { readonly config: string; readonly check?: boolean }): Promise<void> {
  const path = options.config;
  const config = loadPublicFrontendConfig(path);
  if (options.check) {
    process.stdout.write(
      `${path}: valid (controller ${config.controller.url.origin}, shares at <token>.${config.frontend.domain}, ${config.oauth?.providers.length ?? 0} provider(s))\n`,
    );
    return;
  }
  const stopped = untilSignal();
  const logger = createLogger('svc-public-frontend');
  const running = await startPublicFrontend(config, logger);
  const { replicas } = config;
  process.stdout.write(
    [
      'svc public-frontend is listening (ready once the first share registry snapshot arrived: /readyz)',
      `  frontend:  listening on port ${running.frontend.port}; endpoint ${running.frontend.endpointUrl.origin}`,
      `  registry:  ${config.controller.url.origin}`,
      `  reports:   as ${running.replicaName} to the controller every ${REPORT_INTERVAL_MS / 1000} s (the console's presence and traffic)`,
      ...(running.frontend.metricsPort ? [`  metrics:   port ${running.frontend.metricsPort}`] : []),
      ...(replicas && running.peerPort !== undefined
        ? [
            `  replicas:  pod ${replicas.podName} in namespace ${replicas.namespace}; peer listener on port ${running.peerPort} (advertised as ${formatAddress({ host: replicas.podIp, port: running.peerPort })})`,
          ]
        : []),
      '',
    ].join('\n'),
  );
  await stopped;
  await running.close();
}
