import { agentCommandOperations } from './operations/agent-commands.ts';
import { OperationContext, type ApiDependencies, type Operation } from './operations/context.ts';
import { enrollmentOperations } from './operations/enrollment.ts';
import { environmentOperations } from './operations/environment.ts';

export { notConfigured, type ApiDependencies, type Body, type Operation } from './operations/context.ts';

/**
 * The API operations (paths relative to `/api/v1`), after the server has checked the media type,
 * the account token and the body against the OpenAPI document:
 * - `operations/environment.ts`: enable, disable;
 * - `operations/enrollment.ts`: enroll, unenroll;
 * - `operations/agent-commands.ts`: ping, share, status, unshare, access, unaccess, http-healthcheck.
 * Each `/agent` operation checks that the account owns the environment and that it is enrolled
 * (`operations/context.ts`), then forwards one signed command to the environment's agent.
 */
export function operations(deps: ApiDependencies): Map<string, Operation> {
  const ctx = new OperationContext(deps);
  return new Map<string, Operation>([
    ...environmentOperations(ctx),
    ...enrollmentOperations(ctx),
    ...agentCommandOperations(ctx),
  ]);
}
