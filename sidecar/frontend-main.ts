import cluster from 'node:cluster';
import { ConfigError, errorText, problemText } from '../lib/errors.ts';
import { createLogger } from '../lib/logger.ts';
import { untilSignal } from '../lib/signals.ts';
import { loadFrontendConfig, type FrontendConfig } from '../lib/config/frontend.ts';
import { ShareFileCache } from '../lib/config/share-file-cache.ts';
import { staticShares, type ShareSource } from '../lib/share/source.ts';
import { watchFrontendConfig } from './config-watch.ts';
import { sharedStateOverIpc } from './shared-state.ts';
import { runPrimary } from './workers.ts';

/**
 * `svc frontend --config file`: the per-share sidecar process. Config is validated once (the
 * process refuses to start on any problem); afterwards the share list is reloaded when the file or
 * a file of its `share_directory` changes (a mounted Secret being updated), and a bad edit keeps
 * the last good list. A reload validates only the share files that changed since the last load.
 */
export async function runFrontend(options: { readonly config: string }): Promise<void> {
  const path = options.config;
  const shareFiles = new ShareFileCache();
  const config = loadFrontendConfig(path, { shareFiles });
  const log = createLogger('frontend');
  if (config.workers > 1 && cluster.isPrimary) return runPrimary(config.workers, log);
  const stopped = untilSignal();
  // A worker whose primary was killed outright stops the normal way.
  const primaryGone = (): boolean => process.kill(process.pid, 'SIGTERM');
  if (cluster.isWorker) process.once('disconnect', primaryGone);
  let current = staticShares(config.shares);
  const shares: ShareSource = { lookup: (t) => current.lookup(t), has: (t) => current.has(t) };
  // Imported here, not at the top: a workers' primary serves no request and never loads it.
  const { startFrontend } = await import('./frontend.ts');
  const frontend = await startFrontend({
    listen: config.oauth.bindAddress,
    endpointUrl: config.oauth.endpointUrl,
    domain: config.oauth.cookieDomain,
    oauth: config.oauth,
    shares,
    logger: log,
    ...(cluster.isWorker ? { sharedState: sharedStateOverIpc() } : {}),
    ...(config.metricsAddress ? { metricsListen: config.metricsAddress } : {}),
  });

  const fingerprint = (c: FrontendConfig): string => JSON.stringify(c.oauth);
  const loaded = fingerprint(config);
  let shareDirectory = config.shareDirectory;
  const stopWatching = watchFrontendConfig(
    path,
    () => shareDirectory,
    () => {
      try {
        const next = loadFrontendConfig(path, { shareFiles });
        current = staticShares(next.shares);
        shareDirectory = next.shareDirectory;
        log.info({ shares: next.shares.length }, 'configuration reloaded');
        if (fingerprint(next) !== loaded) log.warn('the oauth section changed; restart the frontend to apply it');
      } catch (err) {
        const problems = err instanceof ConfigError ? err.problems.map(problemText) : [errorText(err)];
        log.error({ problems }, 'configuration change rejected; keeping the previous shares');
      }
    },
  );

  await stopped;
  stopWatching();
  log.info('shutting down');
  await frontend.close();
  // A worker's IPC channel to the primary would keep it running.
  if (cluster.isWorker) {
    process.off('disconnect', primaryGone);
    process.disconnect();
  }
}
