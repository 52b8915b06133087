import type { Command } from 'commander';
import type { ControllerCommandOptions } from '../serve/controller-main.ts';
import { registerAdminCommands } from './admin.ts';
import { registerEnableCommands } from './enable.ts';
import { registerEnrollCommands } from './enroll.ts';

/**
 * The controller's commands (docs/controller.md): `controller`, `admin create account|identity`,
 * `enable`, `disable`, `agent enroll|unenroll`.
 */
export function registerControllerCommands(program: Command): void {
  program
    .command('controller')
    .description('run the controller REST API (/api/v1) alone')
    .option(
      '-c, --config <file>',
      'controller configuration (YAML): data_dir, controller, agent_controller, public_frontend (tunnels served by svc public-frontend replicas); with frontend or oauth also the public frontend for tunnels in this process',
    )
    .option('--data-dir <dir>', "state directory (default $SVC_DATA_DIR, the config's data_dir, or ~/.svc)")
    .option('--listen <ip:port>', 'API listen address (overrides controller.listen; default 127.0.0.1:18080)')
    .option('--store <kind>', 'where accounts, environments and enrollments live: file (data dir) or kubernetes')
    .option('--dev', 'installation only: the bundled development identity provider (never for production)')
    .option('--namespace <ns>', 'with --store kubernetes: namespace of the records (default: the pod namespace)')
    .action(async (opts: ControllerCommandOptions) => {
      const { runController } = await import('../serve/controller-main.ts');
      await runController(opts);
    });
  registerAdminCommands(program);
  registerEnableCommands(program);
  registerEnrollCommands(program);
}
