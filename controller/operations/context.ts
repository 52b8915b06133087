import type { CommandName } from '../../lib/remoting/protocol.ts';
import type { ControllerIdentity } from '../../lib/remoting/identity.ts';
import type { Logger } from '../../lib/logger.ts';
import type { SvcError } from '../../lib/errors.ts';
import { apiError } from '../errors.ts';
import type { RemotingHub } from '../remoting-hub.ts';
import type { AccountRecord, ControllerStore, EnvironmentRecord } from '../store.ts';
import type { ShareRegistry } from '../share-registry.ts';

export type Body = Record<string, unknown>;

export interface Operation {
  /** `/agent` operations need the `agent_controller` section (501 without it). */
  readonly remote: boolean;
  handle(account: AccountRecord, body: Body): Promise<unknown>;
}

export interface ApiDependencies {
  readonly store: ControllerStore;
  readonly logger: Logger;
  /** Present when `agent_controller` is configured. */
  readonly remoting?: { readonly hub: RemotingHub; readonly identity: ControllerIdentity };
  /** Present when the controller runs with a public frontend for tunnels (the installation). */
  readonly registry?: ShareRegistry;
}

export const remote = (handle: Operation['handle']): Operation => ({ remote: true, handle });
export const local = (handle: Operation['handle']): Operation => ({ remote: false, handle });

/** The fields of `body` named by `keys` that are present: what is forwarded to an agent. */
export function pick(body: Body, keys: readonly string[]): Body {
  return Object.fromEntries(keys.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]));
}

/** The checks every operation on an environment shares. */
export class OperationContext {
  readonly deps: ApiDependencies;

  constructor(deps: ApiDependencies) {
    this.deps = deps;
  }

  /** The account's environment; another account's answers exactly like a missing one: no existence oracle. */
  async ownEnvironment(account: AccountRecord, envZId: unknown): Promise<EnvironmentRecord> {
    const env = await this.deps.store.getEnvironment(String(envZId));
    if (!env || env.accountId !== account.id) {
      throw apiError('environment_not_found', `environment ${String(envZId)} does not exist for this account`);
    }
    return env;
  }

  /** The remoting hub and identity, or 501 when `agent_controller` is not configured. */
  remoting(): NonNullable<ApiDependencies['remoting']> {
    if (!this.deps.remoting) throw notConfigured();
    return this.deps.remoting;
  }

  /** Forwards one signed command to an enrolled environment's agent (controller/remoting-hub.ts). */
  async command(account: AccountRecord, body: Body, name: CommandName, args: Body): Promise<unknown> {
    const { hub } = this.remoting();
    const env = await this.ownEnvironment(account, body.envZId);
    const enrollment = await this.deps.store.getEnrollmentByEnvironment(env.envZId);
    if (!enrollment) {
      throw apiError('not_enrolled', `environment ${env.envZId} is not enrolled: run svc agent enroll on its machine`);
    }
    this.deps.logger.info({ account: account.id, envZId: env.envZId, command: name }, 'remote command');
    return hub.call(env.envZId, name, args);
  }
}

export function notConfigured(): SvcError {
  return apiError(
    'agent_controller_not_configured',
    'agent remoting is not configured on this controller: create an identity (svc admin create identity <name>), add an agent_controller section with its z_id and identity_path, and restart the controller',
  );
}
