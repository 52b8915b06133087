import { hostname } from 'node:os';
import type { Command } from 'commander';
import { ensureDataDir, resolveDataDir } from '../lib/data-dir.ts';
import { environmentPath, readEnrollment, readEnvironment, removeFile, writeJsonFile } from '../lib/remoting/files.ts';
import type { EnvironmentFile } from '../lib/remoting/files.ts';
import { callApi, resolveApiEndpoint } from '../lib/api-client.ts';
import { SvcError } from '../lib/errors.ts';
import { AGENT_DATA_DIR_OPTION, onAgentDataDir, requireEnvironment } from './agent-files.ts';

/**
 * `svc enable <account_token> [--api-endpoint URL]`: creates an environment for the account at the
 * controller and records it in the agent's data directory (`environment.json`, mode 0600), which
 * `svc agent enroll` needs. `svc disable` deletes it again.
 */
export function registerEnableCommands(program: Command): void {
  program
    .command('enable')
    .description("enable this machine's agent as an environment of an account at the controller")
    .argument('<account_token>', 'account token (from svc admin create account)')
    .option('--api-endpoint <url>', 'controller base URL (default $SVC_API_ENDPOINT or http://127.0.0.1:18080)')
    .option('-d, --description <text>', 'description of this environment', '')
    .option(...AGENT_DATA_DIR_OPTION)
    .action(async (accountToken: string, opts: { apiEndpoint?: string; description: string; dataDir?: string }) => {
      const dataDir = resolveDataDir(opts.dataDir);
      const existing = readEnvironment(dataDir);
      if (existing) {
        throw new SvcError(
          'already_enabled',
          `this agent is already enabled as environment ${existing.envZId} at ${existing.apiEndpoint} (${environmentPath(dataDir)}); run svc disable first`,
        );
      }
      const apiEndpoint = resolveApiEndpoint(opts.apiEndpoint);
      const { envZId, environmentToken } = await callApi<{ envZId: string; environmentToken: string }>(
        apiEndpoint,
        '/environment/enable',
        accountToken,
        { description: opts.description, host: hostname() },
      );
      ensureDataDir(dataDir, (message) => process.stderr.write(`${message}\n`));
      const file: EnvironmentFile = { version: 1, apiEndpoint, envZId, accountToken, environmentToken };
      writeJsonFile(environmentPath(dataDir), file);
      process.stdout.write(`${envZId}\n`);
      process.stderr.write(
        `enabled environment ${envZId} at ${apiEndpoint}; a running svc serve publishes its shares through the installation when it offers tunnels; next: svc agent enroll (remote control)\n`,
      );
    });

  onAgentDataDir(
    program
      .command('disable')
      .description('delete this environment at the controller (and its enrollment) and forget it locally'),
    async (dataDir) => {
      const env = requireEnvironment(dataDir);
      if (readEnrollment(dataDir)) {
        throw new SvcError('enrolled', 'this agent is enrolled: run svc agent unenroll first');
      }
      await callApi(env.apiEndpoint, '/environment/disable', env.accountToken, { envZId: env.envZId });
      removeFile(environmentPath(dataDir));
      process.stdout.write(`disabled environment ${env.envZId}\n`);
    },
  );
}
