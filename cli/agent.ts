import { InvalidArgumentError, Option, type Command } from 'commander';
import type { HealthCheckResult } from '../agent/healthcheck.ts';
import { expectedStatusProblem } from '../agent/requests.ts';
import { localClient, printJson, subcommand, withLocalOptions, type LocalOptions } from './local.ts';

interface HealthCheckOptions extends LocalOptions {
  timeout: string;
  followRedirects?: boolean;
}

/**
 * `svc agent share http-healthcheck ...` (seed: "Command-line operations", "Health check rules") and
 * `svc agent backend ...` (the share backend process of a Kubernetes share pod).
 */
export function registerAgentCommands(program: Command): void {
  const agent = subcommand(program, 'agent', 'agent operations');
  const share = subcommand(agent, 'share', "operations on the local agent's shares");
  withLocalOptions(
    share
      .command('http-healthcheck')
      .description(
        "check that a proxy share's backend answers <verb> <path> with <expected_status>; prints healthy or unhealthy; <reason>",
      )
      .argument('<share_token>', 'token of a proxy share')
      .argument('<verb>', 'HTTP method, e.g. GET')
      .argument('<path>', 'path on the backend target, e.g. /healthz')
      .argument('<expected_status>', 'expected HTTP status code, e.g. 200', parseStatus)
      .option('--timeout <duration>', 'give up after this long', '5s')
      .option('--follow-redirects', 'follow redirects instead of taking a 3xx as the answer'),
  ).action(async (shareToken: string, verb: string, path: string, expectedStatus: number, opts: HealthCheckOptions) => {
    // The agent checks the expected status's range and the timeout (agent/requests.ts), with these flags' names.
    const result = await localClient(opts).post<HealthCheckResult>(
      `/v1/shares/${encodeURIComponent(shareToken)}/http-healthcheck`,
      {
        verb,
        path,
        expectedStatus,
        timeout: opts.timeout,
        followRedirects: opts.followRedirects === true,
      },
    );
    if (opts.json) printJson(result);
    else process.stdout.write(result.healthy ? 'healthy\n' : `unhealthy; ${result.error}\n`);
    if (!result.healthy) process.exitCode = 1;
  });

  agent
    .command('backend')
    .description('serve one share backend (the agent container of a Kubernetes share pod)')
    .addOption(
      new Option('--backend-mode <mode>', 'proxy: forward to --target URL; web: serve --target folder')
        .choices(['proxy', 'web'])
        .makeOptionMandatory(),
    )
    .requiredOption('--target <url|dir>', 'backend URL (proxy) or absolute folder (web)')
    .requiredOption('--listen <ip:port>', 'where to listen, e.g. 0.0.0.0:9000')
    .addOption(
      new Option(
        '--identity-headers <policy>',
        'strip svc-auth-* look-alikes, or pass them (only behind the OAuth sidecar, on loopback)',
      )
        .choices(['strip', 'pass'])
        .default('strip'),
    )
    .option('--web-listing', 'web: list folders that have no index.html (off by default)')
    .action(
      async (opts: {
        backendMode: string;
        target: string;
        listen: string;
        identityHeaders: string;
        webListing?: boolean;
      }) => {
        const { runBackend } = await import('../agent/backend-main.ts');
        await runBackend(opts);
      },
    );
}

/** A usage error (exit 2) when the argument is no status code at all; the rule is agent/requests.ts's. */
function parseStatus(text: string): number {
  const problem = expectedStatusProblem(/^\d{3}$/.test(text) ? Number(text) : text);
  if (problem) throw new InvalidArgumentError(problem);
  return Number(text);
}
