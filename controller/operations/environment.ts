import { CLOSE_UNENROLLED } from '../../lib/remoting/protocol.ts';
import { newToken } from '../../lib/token.ts';
import { local, type Operation, type OperationContext } from './context.ts';

/** `/environment/enable` and `/environment/disable`: an account's environments (no agent needed). */
export function environmentOperations(ctx: OperationContext): [string, Operation][] {
  const { store, logger } = ctx.deps;
  return [
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
        const env = await ctx.ownEnvironment(account, body.envZId);
        ctx.deps.remoting?.hub.disconnect(env.envZId, CLOSE_UNENROLLED, 'environment disabled');
        await store.deleteEnvironment(env.envZId);
        logger.info({ account: account.id, envZId: env.envZId }, 'environment disabled');
        return {};
      }),
    ],
  ];
}
