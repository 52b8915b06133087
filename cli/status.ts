import type { Command } from 'commander';
import type { AgentStatus } from '../agent/agent.ts';
import { localClient, printJson, withLocalOptions, type LocalOptions } from './local.ts';

/** `svc status`: the local agent's shares and accesses (seed: "Share entry (in the status response)"). */
export function registerStatusCommands(program: Command): void {
  withLocalOptions(program.command('status').description('list the shares and accesses of the local agent')).action(
    async (opts: LocalOptions) => {
      const status = await localClient(opts).get<AgentStatus>('/v1/status');
      if (opts.json) return printJson(status);
      process.stdout.write(formatStatus(status));
    },
  );
}

function formatStatus(status: AgentStatus): string {
  const shares = status.shares
    ? table(
        ['TOKEN', 'MODE', 'BACKEND', 'TARGET', 'FRONTEND'],
        status.shares.map((s) => [
          s.token,
          s.shareMode,
          s.backendMode,
          s.backendEndpoint,
          s.frontendEndpoints.join(' ') || '-',
        ]),
      )
    : 'no shares\n';
  const accesses = status.accesses
    ? table(
        ['ACCESS', 'SHARE', 'ENDPOINT'],
        status.accesses.map((a) => [a.token, a.shareToken, a.endpoint]),
      )
    : 'no accesses\n';
  return `${shares}\n${accesses}`;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  return (
    [header, ...rows]
      .map((r) =>
        r
          .map((c, i) => c.padEnd(widths[i] ?? 0))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}
