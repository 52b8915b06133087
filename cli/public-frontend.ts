import type { Command } from 'commander';

/**
 * `svc public-frontend --config <file> [--check]`: the installation's public frontend for tunnelled
 * shares in its own process (Kubernetes replicas in front of one controller; docs/controller.md).
 */
export function registerPublicFrontendCommands(program: Command): void {
  program
    .command('public-frontend')
    .description(
      "run the installation's public frontend for tunnelled shares in its own process, reading the share registry from the controller",
    )
    .requiredOption(
      '-c, --config <file>',
      'configuration (YAML): frontend {listen, domain, endpoint_url, metrics_listen}, oauth, tunnel, controller {url, credential_file}',
    )
    .option('--check', 'validate the configuration, report every problem and exit')
    .action(async (opts: { config: string; check?: boolean }) => {
      const { runPublicFrontend } = await import('../sidecar/public-frontend-main.ts');
      await runPublicFrontend(opts);
    });
}
