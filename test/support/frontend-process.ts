import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface FrontendProcess {
  readonly child: ChildProcess;
  /** The port of the first "frontend listening" line. */
  readonly port: number;
  /** Everything the process logged so far (its log goes to stderr). */
  readonly stderr: () => string;
}

/**
 * `svc frontend --config file` as a real process, resolved once it logs the port it listens on.
 * `node` adds Node options (a preload) and environment variables.
 */
export async function spawnFrontend(
  file: string,
  node: { execArgv?: readonly string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<FrontendProcess> {
  const svc = join(import.meta.dirname, '../../bin/svc.js');
  const child = spawn(process.execPath, [...(node.execArgv ?? []), svc, 'frontend', '--config', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...node.env },
  });
  let stderr = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /"port":(\d+)/.exec(stderr);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`frontend exited ${code}: ${stderr}`)));
  });
  return { child, port, stderr: () => stderr };
}
