import { SvcError } from '../../lib/errors.ts';
import { CLOSE_UNENROLLED } from '../../lib/remoting/protocol.ts';
import { apiError } from '../errors.ts';
import { newSecretToken } from '../tokens.ts';
import { remote, type Operation, type OperationContext } from './context.ts';

/**
 * `/agent/enroll` and `/agent/unenroll`: one enrollment per environment. Enrolling answers the
 * enrollment token (shown once, stored hashed) and the controller's identity the agent pins.
 */
export function enrollmentOperations(ctx: OperationContext): [string, Operation][] {
  const { store, logger } = ctx.deps;
  return [
    [
      '/agent/enroll',
      remote(async (account, body) => {
        const { identity } = ctx.remoting();
        const env = await ctx.ownEnvironment(account, body.envZId);
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
        const { hub } = ctx.remoting();
        const env = await ctx.ownEnvironment(account, body.envZId);
        const enrollment = await store.getEnrollmentByEnvironment(env.envZId);
        if (!enrollment) throw apiError('not_enrolled', `environment ${env.envZId} is not enrolled`);
        await store.deleteEnrollment(enrollment.id);
        hub.disconnect(env.envZId, CLOSE_UNENROLLED, 'unenrolled');
        logger.info({ account: account.id, envZId: env.envZId, enrollment: enrollment.id }, 'agent unenrolled');
        return {};
      }),
    ],
  ];
}
