import type { Command } from 'commander';
import type { EnvironmentAgentOptions } from '../agent/environment-main.ts';
import { subcommand } from './local.ts';

/**
 * `svc agent environment --namespace N --enrollment-file F`: the environment agent of a Kubernetes
 * namespace enrolled by an AgentEnrollment (docs/controller.md, "Kubernetes"). The operator runs it
 * in a Deployment with the enrollment Secret mounted as F and a ServiceAccount that may only manage
 * Shares and Accesses in N.
 */
export function registerEnvironmentAgentCommands(program: Command): void {
  const agent = subcommand(program, 'agent', 'agent operations');
  agent
    .command('environment')
    .description("hold an enrolled namespace's remoting connection and run remote commands as Share/Access objects")
    .requiredOption('--namespace <ns>', 'the namespace (environment) whose Shares and Accesses the agent manages')
    .requiredOption(
      '--enrollment-file <path>',
      'agent-enrollment.json written by the operator (the mounted enrollment Secret)',
    )
    .option('--health-listen <ip:port>', 'serve /healthz (alive) and /readyz (connected to the controller) here')
    .action(async (opts: EnvironmentAgentOptions) => {
      const { runEnvironmentAgent } = await import('../agent/environment-main.ts');
      await runEnvironmentAgent(opts);
    });
}
