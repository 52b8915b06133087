/**
 * The installation's console under test: `startInstallation` in this process with `--dev` (the
 * bundled oidc-provider as the installation's identity provider), an `agent_controller` identity,
 * and `svc serve` agents as real processes, each enabled for its own account and enrolled for
 * remote commands.
 */
import { writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { newSecretToken } from '../../controller/tokens.ts';
import { createLogger } from '../../lib/logger.ts';
import { createIdentity } from '../../lib/remoting/identity.ts';
import { startInstallation, type RunningInstallation } from '../../serve/installation.ts';
import { startSvc, svcCli, tempDir, type Process } from '../controller/harness.ts';

export const DOMAIN = 'svc.localhost';
export const ADMIN = 'root@example.com';

export interface ConsoleInstallation {
  readonly installation: RunningInstallation;
  readonly dataDir: string;
  /** `http://127.0.0.1:<api port>` */
  readonly apiBase: string;
  readonly apiPort: number;
  /** What the installation logged (the console must never log a token). */
  logs(): string;
  /** An account (as `svc admin create account` makes it): its id and token. */
  createAccount(email: string): Promise<{ id: string; token: string }>;
  close(): Promise<void>;
}

export async function startConsoleInstallation(): Promise<ConsoleInstallation> {
  const dataDir = tempDir('svc-console-');
  const identity = createIdentity('ctl');
  const identityPath = join(dataDir, 'ctl-identity.json');
  writeFileSync(identityPath, JSON.stringify(identity), { mode: 0o600 });
  const config = join(dataDir, 'installation.yaml');
  writeFileSync(
    config,
    JSON.stringify({
      frontend: { listen: '127.0.0.1:0', domain: DOMAIN },
      controller: { listen: '127.0.0.1:0' },
      agent_controller: { z_id: identity.zId, identity_path: identityPath },
      console: { admins: [ADMIN] },
    }),
  );
  let logged = '';
  const destination = new PassThrough();
  destination.on('data', (c: Buffer) => (logged += c.toString()));
  const logger = createLogger('console-test', { level: 'debug', destination });
  const installation = await startInstallation({ config, dataDir, dev: true }, logger);
  const apiBase = new URL(installation.controller.apiUrl).origin;
  const store = new ControllerFileStore(dataDir);
  return {
    installation,
    dataDir,
    apiBase,
    apiPort: installation.controller.port,
    logs: () => logged,
    createAccount: async (email) => {
      const { token, id, hash } = newSecretToken('svca');
      await store.createAccount({ id, email, tokenHash: hash, createdAt: new Date().toISOString() });
      return { id, token };
    },
    close: async () => {
      await installation.close();
      await store.close();
    },
  };
}

export interface ConsoleAgent {
  readonly process: Process;
  readonly envZId: string;
  readonly dataDir: string;
}

/** `svc serve`, `svc enable <token>` against the installation and `svc agent enroll` (yes on stdin). */
export async function startEnrolledAgent(apiBase: string, accountToken: string): Promise<ConsoleAgent> {
  const dataDir = tempDir('svc-console-agent-');
  const agent = await startSvc(['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0'], /svc serve is ready/);
  const enabled = await svcCli(['enable', accountToken, '--api-endpoint', apiBase, '--data-dir', dataDir]);
  expect(enabled.code, enabled.stderr).toBe(0);
  await agent.waitFor(/tunnel: connected to the installation/);
  const enrolled = await svcCli(['agent', 'enroll', '--data-dir', dataDir], { input: 'yes\n' });
  expect(enrolled.code, enrolled.stderr).toBe(0);
  await agent.waitFor(/remoting: connected to the controller/);
  const envZId = enabled.stdout.trim();
  return { process: agent, envZId, dataDir };
}
