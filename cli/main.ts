import { Command, CommanderError } from 'commander';
import { SvcError, errorText } from '../lib/errors.ts';
import { registerFrontendCommands } from './frontend.ts';
import { registerPublicFrontendCommands } from './public-frontend.ts';
import { registerOperatorCommands } from './operator.ts';
import { registerLocalAgentCommands } from './agent-commands.ts';
import { registerControllerCommands } from './controller.ts';
import { registerEnvironmentAgentCommands } from './environment-agent.ts';

/**
 * The `svc` command. Each concern registers its subcommands from its own file; this file only
 * builds the program and maps failures to exit codes: 0 success, 1 failure, 2 usage error.
 */
function buildProgram(): Command {
  const program = new Command('svc')
    .description('svc: share HTTP services and folders through an OAuth-protecting public frontend')
    .exitOverride()
    .showHelpAfterError('(run svc --help for usage)')
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });
  registerFrontendCommands(program);
  registerOperatorCommands(program);
  registerLocalAgentCommands(program);
  registerControllerCommands(program);
  registerPublicFrontendCommands(program);
  registerEnvironmentAgentCommands(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof SvcError) {
      process.stderr.write(`svc: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`svc: unexpected error: ${errorText(err)}\n`);
    return 1;
  }
}
