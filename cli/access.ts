import type { Command } from 'commander';
import type { AccessEntry } from '../agent/agent.ts';
import { localClient, printJson, withLocalOptions, type LocalOptions } from './local.ts';

interface AccessOptions extends LocalOptions {
  bind?: string;
}

/** `svc access private <share_token> [--bind ip:port]` and `svc unaccess <token>`. */
export function registerAccessCommands(program: Command): void {
  const access = program.command('access').description('reach a private share through a local listener');
  withLocalOptions(
    access
      .command('private')
      .description('create a private access: a local listener that forwards to the private share')
      .argument('<share_token>', 'token of the private share')
      .option('--bind <ip:port>', 'where the access listens (default 127.0.0.1 on a free port)'),
  ).action(async (shareToken: string, opts: AccessOptions) => {
    const entry = await localClient(opts).post<AccessEntry>('/v1/accesses', {
      shareToken,
      ...(opts.bind !== undefined ? { bind: opts.bind } : {}),
    });
    if (opts.json) return printJson(entry);
    process.stdout.write(`access token: ${entry.token}\nendpoint: ${entry.endpoint}\n`);
  });

  withLocalOptions(
    program.command('unaccess').description('remove a private access').argument('<token>', 'access token'),
  ).action(async (token: string, opts: LocalOptions) => {
    await localClient(opts).delete(`/v1/accesses/${encodeURIComponent(token)}`);
    if (opts.json) return printJson({ token, removed: true });
    process.stdout.write(`removed access ${token}\n`);
  });
}
