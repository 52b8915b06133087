import { shareRecorder } from '../../agent/inspector/recorder.ts';
import { InspectorStore } from '../../agent/inspector/store.ts';
import { createLogger } from '../../lib/logger.ts';
import { staticShares } from '../../lib/share/source.ts';
import { startFrontend } from '../../sidecar/frontend.ts';

/**
 * The frontend as `svc serve` runs it with the agent's request inspector on, as bench:frontend
 * measures it: one open share `inspected` to `upstream`, recorded into an inspector store with the
 * default bounds (agent/inspector/recorder.ts), in this process.
 */
export async function startInspectedFrontend(arg: {
  upstream: string;
  port: number;
  domain: string;
}): Promise<{ url: string; close(): Promise<void> }> {
  const store = new InspectorStore();
  const frontend = await startFrontend({
    listen: { host: '127.0.0.1', port: arg.port },
    endpointUrl: new URL(`http://${arg.domain}:${arg.port}`),
    domain: arg.domain,
    shares: staticShares([
      {
        token: 'inspected',
        instance: 'inspected',
        target: new URL(arg.upstream),
        recorder: shareRecorder('inspected', store, 'svc-bench'),
      },
    ]),
    logger: createLogger('inspected-frontend', { level: 'warn' }),
  });
  return { url: `http://127.0.0.1:${frontend.port}/`, close: () => frontend.close() };
}
