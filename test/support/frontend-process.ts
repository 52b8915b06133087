import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface FrontendProcess {
  readonly child: ChildProcess;
  /** The port of the first "frontend listening" line. */
  readonly port: number;
  /** Everything the process logged so far (its log goes to stderr). */
  readonly stderr: () => string;
}

/** `svc frontend --config file` as a real process, resolved once it logs the port it listens on. */
export async function spawnFrontend(file: string): Promise<FrontendProcess> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '../../bin/svc.js'), 'frontend', '--config', file], {
    stdio: ['ignore', 'pipe', 'pipe'],
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
