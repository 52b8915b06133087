import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { redactedToken } from '../agent/remoting/client.ts';
import {
  enrollmentPath,
  readEnrollment,
  readEnvironment,
  removeFile,
  writeJsonFile,
  type EnrollmentFile,
} from '../lib/remoting/files.ts';
import { callApi } from '../lib/api-client.ts';
import { SvcError } from '../lib/errors.ts';
import { onAgentDataDir, requireEnrollment, requireEnvironment } from './agent-files.ts';
import { subcommand } from './local.ts';

interface EnrollResponse {
  token: string;
  enrollmentId: string;
  envZId: string;
  controller: { zId: string; publicKey: string };
}

/**
 * `svc agent enroll [--yes]` and `svc agent unenroll` (seed: "Agent enrollment"). Enrolling shows
 * the controller address and asks for `yes` (stdin) before it asks the controller for an enrollment
 * token; the token and the controller identity it pins go to `agent-enrollment.json` (0600).
 */
export function registerEnrollCommands(program: Command): void {
  const agent = subcommand(program, 'agent', 'agent operations');

  onAgentDataDir(
    agent
      .command('enroll')
      .description('enroll this agent for remote control by the controller it was enabled with (asks for yes)')
      .option('-y, --yes', 'do not ask for confirmation (scripts)'),
    async (dataDir, opts: { yes?: boolean }) => {
      const env = requireEnvironment(dataDir, ': run svc enable <account_token> first');
      const existing = readEnrollment(dataDir);
      if (existing) {
        throw new SvcError(
          'already_enrolled',
          `this agent is already enrolled with ${existing.apiEndpoint} (${enrollmentPath(dataDir)}); run svc agent unenroll first`,
        );
      }
      process.stderr.write(
        `Enrolling environment ${env.envZId} for remote control by the controller at ${env.apiEndpoint}.\n` +
          'The controller will be able to create and remove shares (of any URL or folder this agent can reach) and accesses, and to run health checks.\n',
      );
      if (!opts.yes && !(await confirmed()))
        throw new SvcError('cancelled', 'enrollment cancelled (type yes to enroll)');
      const answer = await callApi<EnrollResponse>(env.apiEndpoint, '/agent/enroll', env.accountToken, {
        envZId: env.envZId,
      });
      const file: EnrollmentFile = {
        version: 1,
        apiEndpoint: env.apiEndpoint,
        envZId: answer.envZId,
        enrollmentId: answer.enrollmentId,
        token: answer.token,
        controller: answer.controller,
        enrolledAt: new Date().toISOString(),
      };
      writeJsonFile(enrollmentPath(dataDir), file);
      process.stdout.write(
        `enrolled with enrollment token ${redactedToken(file)} (in ${enrollmentPath(dataDir)}); controller identity ${file.controller.zId} pinned\n` +
          'a running svc serve on this data directory starts listening for remote commands now (or at its next start)\n',
      );
    },
  );

  onAgentDataDir(
    agent.command('unenroll').description('remove remote control of this agent (at the controller and locally)'),
    async (dataDir) => {
      const enrollment = requireEnrollment(dataDir);
      const env = readEnvironment(dataDir);
      if (env) {
        try {
          await callApi(enrollment.apiEndpoint, '/agent/unenroll', env.accountToken, { envZId: enrollment.envZId });
        } catch (err) {
          // Already removed at the controller: finish the local part.
          if (!(err instanceof SvcError && err.code === 'not_enrolled')) throw err;
        }
      } else {
        process.stderr.write('warning: no environment.json; removing the local enrollment only\n');
      }
      removeFile(enrollmentPath(dataDir));
      process.stdout.write(
        'unenrolled: remote control removed. A running svc serve stops listening at once; remoting errors it logs until then are harmless\n',
      );
    },
  );
}

/** Reads one line from stdin: only `yes` enrolls. */
async function confirmed(): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  try {
    const line = await new Promise<string | undefined>((resolve) => {
      rl.once('line', resolve);
      rl.once('close', () => resolve(undefined));
      process.stderr.write('Type yes to enroll: ');
    });
    return line?.trim() === 'yes';
  } finally {
    rl.close();
  }
}
