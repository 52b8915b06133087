import { SvcError, badInput, notFound } from '../lib/errors.ts';

/**
 * The refusals both executors answer with, written once so that the single-machine agent and the
 * Kubernetes environment agent say the same thing (test/contracts/remote-executor.ts).
 */

export function unknownShare(token: string): SvcError {
  return notFound(`unknown share token ${JSON.stringify(token)}`, 'unknown_share');
}

/** An access to another machine's share asked for before this machine reached its installation. */
export function installationNotConnected(): SvcError {
  return new SvcError(
    'installation_not_connected',
    'this machine is not connected to its installation yet (svc serve keeps retrying): try again once its log says it publishes through the installation',
    { status: 503 },
  );
}

export function unknownAccess(token: string): SvcError {
  return notFound(`unknown access token ${JSON.stringify(token)}`, 'unknown_access');
}

/** An access reaches private shares only; a public one is reached through the frontend. */
export function notPrivate(token: string, frontendEndpoints: readonly string[]): SvcError {
  const where = frontendEndpoints.length > 0 ? `at ${frontendEndpoints.join(', ')}` : 'through the public frontend';
  return badInput(`share ${token} is public: reach it ${where}`, 'not_private');
}

/** Seed, health check rules: proxy backends only. */
export function healthCheckUnsupported(token: string, backendMode: string): SvcError {
  return badInput(
    `share ${token} has backend mode ${backendMode}; health checks exist only for proxy backends`,
    'healthcheck_unsupported',
  );
}
