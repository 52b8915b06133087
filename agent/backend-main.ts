import { untilSignal } from '../lib/signals.ts';
import { isAbsolute } from 'node:path';
import { ConfigReader } from '../lib/config-reader.ts';
import { ConfigError } from '../lib/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { isLoopbackHost } from '../lib/loopback.ts';
import { listenHandler, type RunningListener } from './backends/listener.ts';
import { proxyBackend } from './backends/proxy.ts';
import { HTTP_BACKEND_MODES as BACKEND_MODES } from '../lib/share/spec.ts';
import type { BackendHandler } from './backends/types.ts';
import { assertDirectory, webBackend } from './backends/web.ts';

export interface BackendCommandOptions {
  backendMode: string;
  target: string;
  listen: string;
  identityHeaders: string;
  webListing?: boolean;
}

/**
 * `svc agent backend`: serves ONE share backend on one listener, the agent container of a
 * Kubernetes share pod (docs/operator.md, "Share children"; docs/agent.md, "Commands"). Every path belongs to the share: no
 * health endpoint is intercepted (the pod uses a TCP probe). `--identity-headers pass` is refused
 * unless the listener is on loopback, where only the OAuth sidecar in the same pod can reach it.
 */
export async function startBackend(opts: BackendCommandOptions): Promise<RunningListener> {
  const r = new ConfigReader();
  const mode = BACKEND_MODES.find((m) => m === opts.backendMode);
  if (!mode)
    r.problem('--backend-mode', `must be one of ${BACKEND_MODES.join(', ')}, got ${JSON.stringify(opts.backendMode)}`);
  const listen = r.listenAddress(opts.listen, '--listen');
  const policy = (['strip', 'pass'] as const).find((p) => p === opts.identityHeaders);
  if (!policy) r.problem('--identity-headers', `must be strip or pass, got ${JSON.stringify(opts.identityHeaders)}`);
  if (policy === 'pass' && listen && !isLoopbackHost(listen.host)) {
    r.problem(
      '--identity-headers',
      'pass is only allowed on a loopback listener (behind the OAuth sidecar), e.g. --listen 127.0.0.1:9000',
    );
  }
  let targetUrl: URL | undefined;
  if (mode === 'proxy') targetUrl = r.parseUrl(opts.target, '--target');
  if (mode === 'web') {
    if (!isAbsolute(opts.target))
      r.problem('--target', `must be an absolute folder path, got ${JSON.stringify(opts.target)}`);
    else {
      try {
        assertDirectory(opts.target);
      } catch (err) {
        r.problem('--target', (err as Error).message);
      }
    }
  }
  if (opts.webListing && mode !== 'web') r.problem('--web-listing', 'applies to --backend-mode web only');
  if (r.problems.length > 0 || !listen || !mode || !policy)
    throw new ConfigError('svc agent backend arguments', r.problems);

  const logger = createLogger('svc-agent-backend');
  const handler: BackendHandler =
    mode === 'proxy'
      ? proxyBackend({ target: targetUrl as URL, identityHeaders: policy, logger })
      : webBackend({ root: opts.target, listing: opts.webListing ?? false, logger });
  const running = await listenHandler(handler, listen);
  logger.info(
    { backendMode: mode, listen: `${listen.host}:${running.port}`, identityHeaders: policy },
    'share backend listening',
  );
  return running;
}

/** Runs the backend until SIGTERM/SIGINT, then closes the listener. */
export async function runBackend(opts: BackendCommandOptions): Promise<void> {
  const stopped = untilSignal();
  const running = await startBackend(opts);
  await stopped;
  await running.close();
}
