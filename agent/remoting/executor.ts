import type { AccessEntry, Agent, AgentStatus } from '../agent.ts';
import type { HealthCheckResult } from '../healthcheck.ts';
import { API_SHARE_FIELDS } from '../../lib/share/surfaces.ts';
import { API_REQUEST_FIELDS } from '../requests.ts';

/** `/agent/share` arguments (seed field names), as the controller forwards them. */
export interface RemoteShareArgs {
  readonly shareMode: string;
  readonly backendMode: string;
  readonly target: string;
  readonly oauthProvider?: string;
  readonly oauthEmailAddressPatterns?: readonly string[];
  readonly oauthCheckInterval?: string;
}

export interface RemoteHealthCheckArgs {
  readonly shareToken: string;
  readonly httpVerb: string;
  readonly endpoint: string;
  readonly expectedHttpResponse: number;
  /** Duration text (`5s`); default 5s. */
  readonly timeout?: string;
}

/**
 * What an agent does with a verified remote command. The single-machine agent runs it on its own
 * shares (`agentExecutor`); in a cluster the environment agent implements this interface by writing
 * `Share` and `Access` objects in its namespace. Failures are SvcErrors with a stable code and an
 * HTTP status (404 unknown token, 400 invalid input), which the controller maps to its API errors.
 */
export interface RemoteExecutor {
  share(args: RemoteShareArgs): Promise<{ token: string; frontendEndpoints: string[] }>;
  unshare(args: { token: string }): Promise<void>;
  status(): Promise<AgentStatus>;
  access(args: { shareToken: string; bindAddress?: string }): Promise<AccessEntry>;
  unaccess(args: { token: string }): Promise<void>;
  healthcheck(args: RemoteHealthCheckArgs): Promise<HealthCheckResult>;
}

/** The local agent (agent/agent.ts) as a RemoteExecutor: remote commands run exactly like CLI ones. */
export function agentExecutor(agent: Agent): RemoteExecutor {
  return {
    async share(args) {
      const entry = await agent.share(args, API_SHARE_FIELDS);
      return { token: entry.token, frontendEndpoints: entry.frontendEndpoints };
    },
    async unshare(args) {
      await agent.unshare(args.token);
    },
    status: () => Promise.resolve(agent.status()),
    access: (args) => agent.access(args.shareToken, args.bindAddress, API_REQUEST_FIELDS),
    unaccess: (args) => agent.unaccess(args.token),
    healthcheck: (args) =>
      agent.healthCheck(
        {
          shareToken: args.shareToken,
          verb: args.httpVerb,
          path: args.endpoint,
          expectedStatus: args.expectedHttpResponse,
          timeout: args.timeout,
        },
        API_REQUEST_FIELDS,
      ),
  };
}
