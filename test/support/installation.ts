/**
 * The installation split into processes as on Kubernetes — `svc controller`, `svc public-frontend`
 * replicas, a `svc serve` agent enabled against the controller — for the tests that run every piece
 * as a real process (test/tunnel/public-frontend.test.ts, test/k8s/public-frontend-replicas.test.ts).
 */
import { expect } from 'vitest';
import { startSvc, svcCli, type Process } from '../controller/harness.ts';

export interface ControllerProcess {
  readonly process: Process;
  readonly port: number;
  /** `http://127.0.0.1:<port>`, the `--api-endpoint` of `svc enable`. */
  readonly apiBase: string;
}

/** `svc controller --config <config>` on `listen` (port 0 unless restarting on a known port). */
export async function startControllerProcess(
  config: string,
  dataDir: string,
  listen = '127.0.0.1:0',
): Promise<ControllerProcess> {
  const process = await startSvc(
    ['controller', '--config', config, '--data-dir', dataDir, '--listen', listen],
    /svc controller is ready/,
  );
  const port = Number((await process.waitFor(/api: +http:\/\/127\.0\.0\.1:(\d+)\/api\/v1/))[1]);
  return { process, port, apiBase: `http://127.0.0.1:${port}` };
}

/** `svc public-frontend --config <config>`; `env` carries e.g. KUBECONFIG and the SVC_POD_* variables. */
export async function startPublicFrontendProcess(
  config: string,
  env: NodeJS.ProcessEnv = {},
): Promise<{ process: Process; port: number }> {
  const process = await startSvc(['public-frontend', '--config', config], /svc public-frontend is listening/, { env });
  const port = Number((await process.waitFor(/frontend: {2}listening on port (\d+)/))[1]);
  return { process, port };
}

/**
 * An account on the controller (`svc admin create account`), a `svc serve` agent in `laptopDir`,
 * `svc enable <account token> --api-endpoint`, and the agent's tunnel connected to the installation.
 */
export async function startEnabledAgent(
  controllerDir: string,
  laptopDir: string,
  apiBase: string,
): Promise<{ agent: Process; account: string }> {
  const account = (
    await svcCli(['admin', 'create', 'account', 'me@example.com', '--data-dir', controllerDir])
  ).stdout.trim();
  const agent = await startSvc(['serve', '--data-dir', laptopDir, '--listen', '127.0.0.1:0'], /svc serve is ready/);
  const enabled = await svcCli(['enable', account, '--api-endpoint', apiBase, '--data-dir', laptopDir]);
  expect(enabled.code, enabled.stderr).toBe(0);
  await agent.waitFor(/tunnel: connected to the installation/);
  return { agent, account };
}

/** `svc share <args> --json` of the agent in `laptopDir`. */
export async function cliShare(
  laptopDir: string,
  args: readonly string[],
): Promise<{ token: string; frontendEndpoints: string[] }> {
  const result = await svcCli(['share', ...args, '--json', '--data-dir', laptopDir]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { token: string; frontendEndpoints: string[] };
}

/** `svc unshare <token>` of the agent in `laptopDir`. */
export async function cliUnshare(laptopDir: string, token: string): Promise<void> {
  const result = await svcCli(['unshare', token, '--data-dir', laptopDir]);
  expect(result.code, result.stderr).toBe(0);
}
