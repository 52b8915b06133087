import { CLOSE_UNENROLLED } from '../../lib/remoting/protocol.ts';
import { newToken } from '../../lib/token.ts';
import { newEnvironmentToken } from '../tokens.ts';
import { local, type Operation, type OperationContext } from './context.ts';

/** `/environment/enable` and `/environment/disable`: an account's environments (no agent needed). */
export function environmentOperations(ctx: OperationContext): [string, Operation][] {
  const { store, logger } = ctx.deps;
  return [
    [
      '/environment/enable',
      local(async (account, body) => {
        const envZId = newToken();
        const { token: environmentToken, hash } = newEnvironmentToken(envZId);
        await store.createEnvironment({
          envZId,
          accountId: account.id,
          description: typeof body.description === 'string' ? body.description : '',
          host: typeof body.host === 'string' ? body.host : '',
          tokenHash: hash,
          createdAt: new Date().toISOString(),
        });
        logger.info({ account: account.id, envZId }, 'environment enabled');
        return { envZId, environmentToken };
      }),
    ],
    [
      '/environment/disable',
      local(async (account, body) => {
        const env = await ctx.ownEnvironment(account, body.envZId);
        ctx.deps.remoting?.hub.disconnect(env.envZId, CLOSE_UNENROLLED, 'environment disabled');
        // Its shares leave the registry and its tunnels close before the environment goes.
        await ctx.deps.registry?.removeEnvironment(env.envZId);
        await store.deleteEnvironment(env.envZId);
        logger.info({ account: account.id, envZId: env.envZId }, 'environment disabled');
        return {};
      }),
    ],
  ];
}
