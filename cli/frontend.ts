import type { Command } from 'commander';
import { loadFrontendConfig } from '../lib/config/frontend.ts';

export function registerFrontendCommands(program: Command): void {
  program
    .command('frontend')
    .description('run the OAuth public frontend (the per-share sidecar) from a config file')
    .requiredOption('-c, --config <file>', 'frontend configuration (YAML)')
    .action(async (opts: { config: string }) => {
      const { runFrontend } = await import('../sidecar/frontend-main.ts');
      await runFrontend(opts);
    });

  const config = program.command('config').description('configuration tools');
  config
    .command('check')
    .description('validate a frontend configuration file and report every problem')
    .requiredOption('-c, --config <file>', 'configuration file (YAML)')
    .action((opts: { config: string }) => {
      const parsed = loadFrontendConfig(opts.config);
      process.stdout.write(
        `${opts.config}: valid (${parsed.oauth.providers.length} provider(s), ${parsed.shares.length} share(s))\n`,
      );
    });
}
