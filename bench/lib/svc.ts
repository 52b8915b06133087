import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { startProcess, type BenchProcess } from './processes.ts';

/**
 * `svc` itself as benchmark contenders: long-running `svc serve` and `svc controller` processes
 * started exactly as a user starts them (`node bin/svc.js …`), and one-shot CLI commands against
 * them. Environment variables that would point a command at another data directory or controller
 * are cleared, as the tests' harness does.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SVC = join(ROOT, 'bin/svc.js');
const ENV = { ...process.env, SVC_DATA_DIR: '', SVC_API_ENDPOINT: '', SVC_LOG_LEVEL: 'info' };

export interface SvcProcessOptions {
  readonly name: string;
  readonly dataDir: string;
  /** Extra Node flags, e.g. `--cpu-prof` (the profile is written when the process exits cleanly). */
  readonly nodeFlags?: readonly string[];
  /** Extra environment variables, e.g. `SVC_TUNNEL_TRANSPORT`. */
  readonly env?: Readonly<Record<string, string>>;
}

/** A running `svc serve`: its frontend port is read from the ready banner. */
export type SvcServe = BenchProcess<{ frontendPort: number }>;

/** `svc serve --data-dir <dir> --listen 127.0.0.1:0`, ready once its banner names the frontend port. */
export function startSvcServe(options: SvcProcessOptions): Promise<SvcServe> {
  return startProcess({
    name: options.name,
    command: process.execPath,
    args: [...(options.nodeFlags ?? []), SVC, 'serve', '--data-dir', options.dataDir, '--listen', '127.0.0.1:0'],
    cwd: ROOT,
    env: { ...ENV, ...options.env },
    timeoutMs: 60_000,
    ready: (line) => {
      const match = /frontend: {2}listening on port (\d+)/.exec(line);
      return match ? { frontendPort: Number(match[1]) } : undefined;
    },
  });
}

/** A running installation (`svc controller --config` with a frontend section); `apiEndpoint` is what `svc enable --api-endpoint` takes. */
export type SvcInstallation = BenchProcess<{ frontendPort: number; apiEndpoint: string; domain: string }>;

/**
 * The installation on one machine: controller API and public frontend for tunnels in one process,
 * both on 127.0.0.1 port 0, shares at `<token>.<domain>` (README, "Share your laptop's service
 * through the installation").
 */
export async function startSvcInstallation(
  options: SvcProcessOptions & { readonly domain: string },
): Promise<SvcInstallation> {
  const config = join(options.dataDir, '..', `${options.name}.yaml`);
  writeFileSync(
    config,
    stringify({
      frontend: { listen: '127.0.0.1:0', domain: options.domain },
      controller: { listen: '127.0.0.1:0' },
    }),
  );
  let apiEndpoint: string | undefined;
  return startProcess({
    name: options.name,
    command: process.execPath,
    args: [...(options.nodeFlags ?? []), SVC, 'controller', '--config', config, '--data-dir', options.dataDir],
    cwd: ROOT,
    env: ENV,
    timeoutMs: 60_000,
    // The banner names the API first, then the frontend.
    ready: (line) => {
      apiEndpoint ??= /^ {2}api: +(http:\/\/\S+)\/api\/v1/.exec(line)?.[1];
      const match = /frontend: {2}listening on port (\d+)/.exec(line);
      return match && apiEndpoint ? { frontendPort: Number(match[1]), apiEndpoint, domain: options.domain } : undefined;
    },
  });
}

/** An agent to enable: a running `svc serve` and its data directory. */
export interface SvcAgent {
  readonly dataDir: string;
  readonly process: BenchProcess<unknown>;
}

/**
 * Creates one account on the installation (`svc admin create account`) and enables every agent
 * with it against the installation's API (`svc enable`), one after the other as a user would;
 * resolves once each agent's tunnel to the installation is connected.
 */
export async function enableAgents(
  installation: SvcInstallation,
  installationDataDir: string,
  agents: readonly SvcAgent[],
): Promise<void> {
  const account = (
    await svcCommand(['admin', 'create', 'account', 'bench@example.com', '--data-dir', installationDataDir])
  ).trim();
  for (const agent of agents) {
    await svcCommand([
      'enable',
      account,
      '--api-endpoint',
      installation.ready.apiEndpoint,
      '--data-dir',
      agent.dataDir,
    ]);
    await waitForOutput(agent.process, /tunnel: connected to the installation/);
  }
}

/** Runs `svc <args>` to completion; rejects with its output when it exits non-zero. */
export function svcCommand(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [SVC, ...args], { cwd: ROOT, env: ENV }, (err, stdout, stderr) => {
      if (err) reject(new Error(`svc ${args[0] ?? ''} ${args[1] ?? ''} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** `svc share public <target> --json` against the `svc serve` of `dataDir`: the share's token and URL. */
export async function sharePublic(dataDir: string, target: string): Promise<{ token: string; url: URL }> {
  const out = await svcCommand(['share', 'public', target, '--json', '--data-dir', dataDir]);
  const entry = JSON.parse(out) as { token: string; frontendEndpoints: string[] };
  const endpoint = entry.frontendEndpoints[0];
  if (!endpoint) throw new Error(`svc share public printed no frontend endpoint: ${out}`);
  return { token: entry.token, url: new URL(endpoint) };
}

/** Resolves once `pattern` appears in the process's output (polled), or rejects after `timeoutMs`. */
export async function waitForOutput(proc: BenchProcess<unknown>, pattern: RegExp, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(proc.output())) {
    if (Date.now() > deadline)
      throw new Error(`${proc.name}: no ${String(pattern)} within ${timeoutMs} ms\n${proc.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
