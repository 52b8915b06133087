import { Command, CommanderError } from 'commander';
import { SvcError, errorText } from '../lib/errors.ts';

type Registrar = (program: Command) => void;

/**
 * Each concern registers its subcommands from its own file, imported only when needed: a sidecar
 * running `svc frontend` must not load (and hold in memory) the controller, agent and operator code
 * and their libraries. Kept in step with the files by test/cli/command-owners.test.ts.
 */
export const REGISTRARS = {
  frontend: async (): Promise<Registrar> => (await import('./frontend.ts')).registerFrontendCommands,
  publicFrontend: async (): Promise<Registrar> => (await import('./public-frontend.ts')).registerPublicFrontendCommands,
  operator: async (): Promise<Registrar> => (await import('./operator.ts')).registerOperatorCommands,
  localAgent: async (): Promise<Registrar> => (await import('./agent-commands.ts')).registerLocalAgentCommands,
  controller: async (): Promise<Registrar> => (await import('./controller.ts')).registerControllerCommands,
  environmentAgent: async (): Promise<Registrar> =>
    (await import('./environment-agent.ts')).registerEnvironmentAgentCommands,
};

/** Top-level commands registered by exactly one file; any other first word (help, `agent`, a typo) loads them all. */
export const COMMAND_OWNERS: Readonly<Record<string, keyof typeof REGISTRARS>> = {
  frontend: 'frontend',
  config: 'frontend',
  'public-frontend': 'publicFrontend',
  operator: 'operator',
  serve: 'localAgent',
  share: 'localAgent',
  unshare: 'localAgent',
  access: 'localAgent',
  unaccess: 'localAgent',
  status: 'localAgent',
  controller: 'controller',
  admin: 'controller',
  enable: 'controller',
  disable: 'controller',
};

/**
 * Subcommands of a command several files add to, each registered by exactly one file: `svc agent
 * backend` (the agent container of every share pod without OAuth) loads only its own file, not the
 * controller's, operator's and frontend's with what they import. `svc agent` alone, or help, loads them all.
 */
export const SUBCOMMAND_OWNERS: Readonly<Record<string, Readonly<Record<string, keyof typeof REGISTRARS>>>> = {
  agent: {
    backend: 'localAgent',
    share: 'localAgent',
    enroll: 'controller',
    unenroll: 'controller',
    environment: 'environmentAgent',
  },
};

/** The one registrar that owns the command line's command, or undefined when it takes all of them. */
function ownerOf(argv: readonly string[]): keyof typeof REGISTRARS | undefined {
  const [first = '', second = ''] = argv;
  if (Object.hasOwn(COMMAND_OWNERS, first)) return COMMAND_OWNERS[first];
  const byName = Object.hasOwn(SUBCOMMAND_OWNERS, first) ? SUBCOMMAND_OWNERS[first] : undefined;
  return byName && Object.hasOwn(byName, second) ? byName[second] : undefined;
}

/** Builds the program and maps failures to exit codes: 0 success, 1 failure, 2 usage error. */
async function buildProgram(argv: readonly string[]): Promise<Command> {
  const program = new Command('svc')
    .description('svc: share HTTP services and folders through an OAuth-protecting public frontend')
    .exitOverride()
    .showHelpAfterError('(run svc --help for usage)')
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });
  const owner = ownerOf(argv);
  const needed = owner ? [REGISTRARS[owner]] : Object.values(REGISTRARS);
  for (const register of await Promise.all(needed.map((load) => load()))) register(program);
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  const program = await buildProgram(argv);
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
