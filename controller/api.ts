import { CLOSE_UNENROLLED, type CommandName } from '../lib/remoting/protocol.ts';
import { newToken } from '../lib/token.ts';
import { SvcError } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { apiError } from './errors.ts';
import type { ControllerIdentity } from '../lib/remoting/identity.ts';
import type { RemotingHub } from './remoting-hub.ts';
import { newSecretToken } from './secrets.ts';
import type { AccountRecord, ControllerStore, EnvironmentRecord } from './store.ts';

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
}

/**
 * The API operations (paths relative to `/api/v1`), after the server has checked the media type,
 * the account token and the body against the OpenAPI document. Each `/agent` operation checks that
 * the account owns the environment and that it is enrolled, then forwards one signed command to
 * the environment's agent (controller/remoting-hub.ts).
 */
export function operations(deps: ApiDependencies): Map<string, Operation> {
  const { store, logger } = deps;

  const ownEnvironment = async (account: AccountRecord, envZId: unknown): Promise<EnvironmentRecord> => {
    const env = await store.getEnvironment(String(envZId));
    // An environment of another account answers exactly like a missing one: no existence oracle.
    if (!env || env.accountId !== account.id) {
      throw apiError('environment_not_found', `environment ${String(envZId)} does not exist for this account`);
    }
    return env;
  };

  const remoting = () => {
    if (!deps.remoting) throw notConfigured();
    return deps.remoting;
  };

  /** Forwards a command to an enrolled environment's agent. */
  const command = async (account: AccountRecord, body: Body, name: CommandName, args: Body): Promise<unknown> => {
    const { hub } = remoting();
    const env = await ownEnvironment(account, body.envZId);
    const enrollment = await store.getEnrollmentByEnvironment(env.envZId);
    if (!enrollment) {
      throw apiError('not_enrolled', `environment ${env.envZId} is not enrolled: run svc agent enroll on its machine`);
    }
    logger.info({ account: account.id, envZId: env.envZId, command: name }, 'remote command');
    return hub.call(env.envZId, name, args);
  };

  const remote = (handle: Operation['handle']): Operation => ({ remote: true, handle });
  const local = (handle: Operation['handle']): Operation => ({ remote: false, handle });
  const pick = (body: Body, keys: readonly string[]): Body =>
    Object.fromEntries(keys.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]));

  return new Map<string, Operation>([
    [
      '/environment/enable',
      local(async (account, body) => {
        const envZId = newToken();
        await store.createEnvironment({
          envZId,
          accountId: account.id,
          description: typeof body.description === 'string' ? body.description : '',
          host: typeof body.host === 'string' ? body.host : '',
          createdAt: new Date().toISOString(),
        });
        logger.info({ account: account.id, envZId }, 'environment enabled');
        return { envZId };
      }),
    ],
    [
      '/environment/disable',
      local(async (account, body) => {
        const env = await ownEnvironment(account, body.envZId);
        deps.remoting?.hub.disconnect(env.envZId, CLOSE_UNENROLLED, 'environment disabled');
        await store.deleteEnvironment(env.envZId);
        logger.info({ account: account.id, envZId: env.envZId }, 'environment disabled');
        return {};
      }),
    ],
    [
      '/agent/enroll',
      remote(async (account, body) => {
        const { identity } = remoting();
        const env = await ownEnvironment(account, body.envZId);
        const already = () =>
          apiError('already_enrolled', `environment ${env.envZId} is already enrolled: run svc agent unenroll first`);
        if (await store.getEnrollmentByEnvironment(env.envZId)) throw already();
        const { token, id, hash } = newSecretToken('svce');
        try {
          await store.createEnrollment({
            id,
            envZId: env.envZId,
            tokenHash: hash,
            controllerZId: identity.zId,
            createdAt: new Date().toISOString(),
          });
        } catch (err) {
          if (err instanceof SvcError && err.code === 'conflict') throw already();
          throw err;
        }
        logger.info({ account: account.id, envZId: env.envZId, enrollment: id }, 'agent enrolled');
        return {
          token,
          enrollmentId: id,
          envZId: env.envZId,
          controller: { zId: identity.zId, publicKey: identity.publicKey },
        };
      }),
    ],
    [
      '/agent/unenroll',
      remote(async (account, body) => {
        const { hub } = remoting();
        const env = await ownEnvironment(account, body.envZId);
        const enrollment = await store.getEnrollmentByEnvironment(env.envZId);
        if (!enrollment) throw apiError('not_enrolled', `environment ${env.envZId} is not enrolled`);
        await store.deleteEnrollment(enrollment.id);
        hub.disconnect(env.envZId, CLOSE_UNENROLLED, 'unenrolled');
        logger.info({ account: account.id, envZId: env.envZId, enrollment: enrollment.id }, 'agent unenrolled');
        return {};
      }),
    ],
    [
      '/agent/ping',
      remote(async (account, body) => {
        const started = performance.now();
        await command(account, body, 'ping', {});
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
        const result = (await command(account, body, 'share', args)) as { token: string; frontendEndpoints: string[] };
        return { token: result.token, frontendEndpoints: result.frontendEndpoints };
      }),
    ],
    ['/agent/status', remote((account, body) => command(account, body, 'status', {}))],
    [
      '/agent/unshare',
      remote(async (account, body) => {
        await command(account, body, 'unshare', pick(body, ['token']));
        return {};
      }),
    ],
    [
      '/agent/access',
      remote((account, body) => command(account, body, 'access', pick(body, ['shareToken', 'bindAddress']))),
    ],
    [
      '/agent/unaccess',
      remote(async (account, body) => {
        await command(account, body, 'unaccess', pick(body, ['token']));
        return {};
      }),
    ],
    [
      '/agent/share/http-healthcheck',
      remote((account, body) =>
        command(
          account,
          body,
          'healthcheck',
          pick(body, ['shareToken', 'httpVerb', 'endpoint', 'expectedHttpResponse', 'timeout']),
        ),
      ),
    ],
  ]);
}

export function notConfigured(): SvcError {
  return apiError(
    'agent_controller_not_configured',
    'agent remoting is not configured on this controller: create an identity (svc admin create identity <name>), add an agent_controller section with its z_id and identity_path, and restart the controller',
  );
}
