import { pick, remote, type Operation, type OperationContext } from './context.ts';

/**
 * The `/agent` operations that run on the environment's agent: each forwards one signed command
 * with the seed's fields (docs/controller.md, "Remote commands") and answers with the agent's result.
 */
export function agentCommandOperations(ctx: OperationContext): [string, Operation][] {
  return [
    [
      '/agent/ping',
      remote(async (account, body) => {
        const started = performance.now();
        await ctx.command(account, body, 'ping', {});
        return { reachable: true, rttMs: Math.round(performance.now() - started) };
      }),
    ],
    [
      '/agent/share',
      remote(async (account, body) => {
        const args = pick(body, [
          'shareMode',
          'backendMode',
          'target',
          'oauthProvider',
          'oauthEmailAddressPatterns',
          'oauthCheckInterval',
        ]);
        const result = (await ctx.command(account, body, 'share', args)) as {
          token: string;
          frontendEndpoints: string[];
        };
        return { token: result.token, frontendEndpoints: result.frontendEndpoints };
      }),
    ],
    ['/agent/status', remote((account, body) => ctx.command(account, body, 'status', {}))],
    [
      '/agent/unshare',
      remote(async (account, body) => {
        await ctx.command(account, body, 'unshare', pick(body, ['token']));
        return {};
      }),
    ],
    [
      '/agent/access',
      remote((account, body) => ctx.command(account, body, 'access', pick(body, ['shareToken', 'bindAddress']))),
    ],
    [
      '/agent/unaccess',
      remote(async (account, body) => {
        await ctx.command(account, body, 'unaccess', pick(body, ['token']));
        return {};
      }),
    ],
    [
      '/agent/share/http-healthcheck',
      remote((account, body) =>
        ctx.command(
          account,
          body,
          'healthcheck',
          pick(body, ['shareToken', 'httpVerb', 'endpoint', 'expectedHttpResponse', 'timeout']),
        ),
      ),
    ],
  ];
}
