import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { commandExists } from './processes.ts';

/**
 * Records a CPU profile of kube-apiserver through its own `/debug/pprof/profile` endpoint (on by
 * default, `--profiling`; needs an admin's credentials) into `file`. Resolves after `seconds`.
 */
export async function recordApiServerProfile(kc: KubeConfig, seconds: number, file: string): Promise<void> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const options: RequestOptions = { method: 'GET', timeout: (seconds + 60) * 1000 };
  await kc.applyToHTTPSOptions(options);
  const url = new URL(`/debug/pprof/profile?seconds=${seconds}`, cluster.server);
  const body = await new Promise<Buffer>((resolve, reject) => {
    const req = request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(Buffer.concat(chunks))
          : reject(new Error(`pprof: ${res.statusCode} ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
  writeFileSync(file, body);
}

/**
 * The `go tool pprof -top` lines of a Go CPU profile (flat = self time), or a note saying why not
 * (Go is only needed to read the profile, not to record it).
 */
export function goProfileTop(file: string, nodes = 20): string {
  if (!commandExists('go')) return `(go not on PATH: read ${file} with \`go tool pprof -top\`)`;
  try {
    return execFileSync('go', ['tool', 'pprof', '-top', `-nodecount=${nodes}`, file], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (err) {
    return `(go tool pprof failed: ${(err as Error).message.split('\n')[0]})`;
  }
}
