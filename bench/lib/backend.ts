import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixedBody, type FixedBackend } from './fixed-backend.ts';
import { nginxVersion, startNginxBackend } from './nginx.ts';
import { freePort } from './ports.ts';
import { startModule } from './processes.ts';

/** What answers behind every contender of a run. */
export type BackendKind = 'nginx' | 'node';

export interface Backend {
  readonly url: string;
  /** The process that answers (nginx's worker), for its CPU, its core waits and pinning. */
  readonly pid: number;
  /** What it is, for the report. */
  readonly text: string;
}

const FIXED_BACKEND_MODULE = fileURLToPath(new URL('./fixed-backend.ts', import.meta.url));

/**
 * The backend of a run, answering every GET with the same `bodyBytes`-byte body: nginx's one
 * worker (`return 200`), or bench/lib/fixed-backend.ts's node:http server in its own process.
 * Both send the same bytes, so a contender's check of the body holds for either.
 */
export async function startBackend(kind: BackendKind, dir: string, bodyBytes: number): Promise<Backend> {
  if (kind === 'node') {
    const node = await startModule<FixedBackend>('backend', FIXED_BACKEND_MODULE, 'startFixedBackend', { bodyBytes });
    return {
      url: node.ready.url,
      pid: node.pid,
      text: `node:http (bench/lib/fixed-backend.ts), ${bodyBytes}-byte body`,
    };
  }
  const nginx = await startNginxBackend({
    dir: join(dir, 'nginx-backend'),
    port: await freePort(),
    body: fixedBody(bodyBytes).toString('latin1'),
  });
  const pid = nginx.workerPid();
  if (pid === undefined) throw new Error('nginx backend: no worker process');
  return { url: nginx.url, pid, text: `${nginxVersion()}, one worker, \`return 200\` of a ${bodyBytes}-byte body` };
}
