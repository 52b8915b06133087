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

/**
 * A frontend config file's text: an idp1 provider (no network until someone logs in), no metrics
 * listener, one process, and an open share per token, each proxied to `target`.
 */
export function openSharesConfig(tokens: readonly string[], target: URL): string {
  return `oauth:
  bind_address: 127.0.0.1:0
  endpoint_url: http://auth.svc.localhost:8080
  cookie_name: svc-auth-session
  cookie_domain: svc.localhost
  session_lifetime: 6h
  intermediate_lifetime: 5m
  signing_key: ${'k'.repeat(40)}
  encryption_key: ${'e'.repeat(30)}
  providers:
    - { name: google, type: idp1, client_id: id, client_secret: very-secret-value }
shares:
${tokens.map((t) => `  - { token: ${t}, target: "${target.href}" }`).join('\n')}
`;
}
