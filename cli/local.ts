import { Option, type Command } from 'commander';
import { LocalApiClient } from '../agent/client.ts';
import { resolveDataDir } from '../lib/data-dir.ts';

/** Options every command that talks to the local agent shares. */
export interface LocalOptions {
  dataDir?: string;
  json?: boolean;
}

export function withLocalOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--data-dir <dir>', 'data directory of the running `svc serve` (default $SVC_DATA_DIR or ~/.svc)'),
    )
    .option('--json', 'print the result as JSON');
}

export function localClient(opts: LocalOptions): LocalApiClient {
  return new LocalApiClient(resolveDataDir(opts.dataDir));
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Finds a subcommand another concern may already have registered (e.g. `agent`), or creates it. */
export function subcommand(parent: Command, name: string, description: string): Command {
  return parent.commands.find((c) => c.name() === name) ?? parent.command(name).description(description);
}
