import type { Command } from 'commander';
import type { ServeCommandOptions } from '../serve/serve-main.ts';

/** `svc serve [--config svc.yaml] [--dev]`: the single-machine service (docs/agent.md). */
export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('run the single-machine service: agent, local API and public frontend in one process')
    .option('-c, --config <file>', 'serve configuration (YAML): data_dir, frontend, oauth')
    .option(
      '--dev',
      'also start the bundled development identity provider with a ready OAuth config (never for production)',
    )
    .option('--data-dir <dir>', "state and local API socket (default $SVC_DATA_DIR, the config's data_dir, or ~/.svc)")
    .option('--listen <ip:port>', 'frontend listen address (overrides the config; default 127.0.0.1:8080)')
    .option('--check', 'validate the configuration with these flags, print a summary and exit')
    .action(async (opts: ServeCommandOptions) => {
      const { runServe } = await import('../serve/serve-main.ts');
      await runServe(opts);
    });
}
