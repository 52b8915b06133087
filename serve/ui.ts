import { SvcError } from '../lib/errors.ts';
import { startAgentPage, type AgentPageOptions, type RunningAgentPage } from '../agent/web/server.ts';
import type { UiConfig } from './ui-config.ts';

/**
 * Starts the agent's page on `ui.listen`. The default address (127.0.0.1:4040) gives way to a free
 * loopback port when another process (a second svc serve) holds it; an address the config names
 * must be free.
 */
export async function startUi(config: UiConfig, options: Omit<AgentPageOptions, 'listen'>): Promise<RunningAgentPage> {
  try {
    return await startAgentPage({ ...options, listen: config.listen });
  } catch (err) {
    if (!(err instanceof SvcError && err.code === 'bind_failed' && config.defaultListen)) throw err;
    options.logger.warn(
      { listen: `${config.listen.host}:${config.listen.port}` },
      'page address taken; using a free port',
    );
    return startAgentPage({ ...options, listen: { ...config.listen, port: 0 } });
  }
}
