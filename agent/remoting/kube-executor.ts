import type { AccessEntry, AgentStatus } from '../agent.ts';
import { httpHealthCheck, type HealthCheckResult } from '../healthcheck.ts';
import { healthCheckUnsupported, notPrivate, unknownAccess, unknownShare } from '../refusals.ts';
import { API_REQUEST_FIELDS, validateHealthCheckRequest } from '../requests.ts';
import { SvcError, badInput, valueOrThrow } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import {
  ACCESSES,
  NOT_SERVING_REASONS,
  SHARES,
  type Access,
  type KubeObject,
  type Share,
} from '../../lib/kube/resources.ts';
import { newToken } from '../../lib/token.ts';
import type { RemoteExecutor, RemoteHealthCheckArgs, RemoteShareArgs } from './executor.ts';
import { accessEntry, accessToken, shareEntry, shareToken } from './kube-entries.ts';
import { NamespaceObjects } from './kube-objects.ts';
import { accessSpecFromArgs, shareSpecFromArgs } from './kube-specs.ts';

export interface KubeExecutorOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  readonly logger: Logger;
  /** How long `share`/`access` wait for the operator to report the object Ready (default 20 s). */
  readonly readyTimeoutMs?: number;
}

/**
 * The environment agent's RemoteExecutor (docs/controller.md, "Kubernetes"): the namespace is the
 * environment, and remote commands become `Share` and `Access` objects in it, which the operator
 * reconciles. `share` chooses the token itself (spec.token, a fresh random DNS label) and waits for
 * the operator's verdict to answer with `frontendEndpoints`: Ready, or accepted with its pod not
 * serving yet (the Share's status says why); an invalid spec is deleted again and answered with the
 * operator's message; `status` lists every Share and Access in the namespace.
 * Arguments become specs in kube-specs.ts, objects become status entries in kube-entries.ts.
 */
export function kubeExecutor(options: KubeExecutorOptions): RemoteExecutor {
  const { logger } = options;
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const objects = new NamespaceObjects(options.client, options.namespace, readyTimeoutMs);
  const context: Context = { objects, logger, namespace: options.namespace, readyTimeoutMs };
  const findShare = async (token: string): Promise<Share | undefined> =>
    (await objects.shares()).find((s) => shareToken(s) === token);

  return {
    share: (args) => createShare(context, args),

    async unshare({ token }) {
      const share = await findShare(token);
      if (!share) throw unknownShare(token);
      await objects.remove(SHARES, share.metadata.name);
      logger.info({ object: share.metadata.name, share: token }, 'environment agent: deleted Share');
    },

    async status(): Promise<AgentStatus> {
      const [shares, accesses] = await Promise.all([objects.shares(), objects.accesses()]);
      const live = <T extends KubeObject>(list: T[]) => list.filter((o) => !o.metadata.deletionTimestamp);
      const shareEntries = live(shares).map(shareEntry);
      const accessEntries = live(accesses).map(accessEntry);
      return {
        shares: shareEntries.length ? shareEntries : null,
        accesses: accessEntries.length ? accessEntries : null,
      };
    },

    async access(args) {
      const share = await findShare(args.shareToken);
      if (!share) throw unknownShare(args.shareToken);
      return createAccess(context, share, args);
    },

    async unaccess({ token }) {
      const access = (await objects.accesses()).find((a) => accessToken(a) === token);
      if (!access) throw unknownAccess(token);
      await objects.remove(ACCESSES, access.metadata.name);
      logger.info({ object: access.metadata.name, access: token }, 'environment agent: deleted Access');
    },

    async healthcheck(args: RemoteHealthCheckArgs): Promise<HealthCheckResult> {
      const share = await findShare(args.shareToken);
      if (!share) throw unknownShare(args.shareToken);
      return healthCheckShare(share, args);
    },
  };
}

/** What the remote commands work with: the environment's namespace and its objects. */
interface Context {
  readonly objects: NamespaceObjects;
  readonly logger: Logger;
  readonly namespace: string;
  readonly readyTimeoutMs: number;
}

/**
 * `share`: a Share object with a fresh token, answered once the operator's verdict is in: Ready, or
 * accepted with its pod not serving yet. A refused spec is deleted again and answered with why.
 */
async function createShare(
  { objects, logger, namespace, readyTimeoutMs }: Context,
  args: RemoteShareArgs,
): Promise<{ token: string; frontendEndpoints: string[] }> {
  const spec = shareSpecFromArgs(args, newToken());
  const name = `remote-${spec.token}`;
  await objects.create(SHARES, name, spec);
  logger.info({ object: name, share: spec.token }, 'environment agent: created Share');
  const done = await objects.awaitReady<Share>(
    SHARES,
    name,
    (c) =>
      c.status === 'True' ||
      c.reason === 'InvalidSpec' ||
      c.reason === 'TokenConflict' ||
      c.reason === 'AuthQuotaExceeded' ||
      NOT_SERVING_REASONS.has(c.reason),
  );
  if (!done) {
    throw new SvcError(
      'share_not_ready',
      `Share ${namespace}/${name} was created but is not Ready after ${readyTimeoutMs} ms (is the operator running?)`,
      { status: 504 },
    );
  }
  // Accepted but not serving yet (its pod is starting or cannot start): the share exists and its
  // status says why; only a refusal of the spec deletes it again.
  if (done.ready.status !== 'True' && !NOT_SERVING_REASONS.has(done.ready.reason)) {
    await objects.remove(SHARES, name);
    throw badInput(`the operator refused the share: ${done.ready.message}`, 'invalid_share');
  }
  return { token: spec.token, frontendEndpoints: done.object.status?.frontendEndpoints ?? [] };
}

/**
 * `access` to a private Share: an Access object, answered once the operator's verdict is in; a
 * refused or never-ready Access is deleted again.
 */
async function createAccess(
  { objects, logger, namespace }: Context,
  share: Share,
  args: { shareToken: string; bindAddress?: string },
): Promise<AccessEntry> {
  // Refused here, as on one machine, rather than after the operator's verdict on an Access object.
  if ((share.spec?.shareMode ?? 'public') !== 'private') {
    throw notPrivate(args.shareToken, share.status?.frontendEndpoints ?? []);
  }
  const spec = accessSpecFromArgs(args);
  const name = `remote-access-${newToken()}`;
  await objects.create(ACCESSES, name, spec);
  // ShareNotFound is transient here (the share exists; the operator's cache may lag behind).
  const done = await objects.awaitReady<Access>(
    ACCESSES,
    name,
    (c) => c.status === 'True' || c.reason !== 'ShareNotFound',
  );
  if (!done || (done.ready.status !== 'True' && !NOT_SERVING_REASONS.has(done.ready.reason))) {
    await objects.remove(ACCESSES, name);
    if (!done) {
      throw new SvcError('access_not_ready', `Access ${namespace}/${name} did not become Ready`, { status: 504 });
    }
    throw badInput(`the operator refused the access: ${done.ready.message}`, 'invalid_access');
  }
  logger.info({ object: name, share: spec.shareToken }, 'environment agent: created Access');
  return accessEntry(done.object);
}

/** Checks a proxy Share's target from the environment agent's pod (seed: "http-healthcheck"). */
function healthCheckShare(share: Share, args: RemoteHealthCheckArgs): Promise<HealthCheckResult> {
  const backendMode = share.spec?.backendMode ?? 'proxy';
  if (backendMode !== 'proxy') throw healthCheckUnsupported(args.shareToken, backendMode);
  const limits = valueOrThrow(
    validateHealthCheckRequest(
      { path: args.endpoint, expectedStatus: args.expectedHttpResponse, timeout: args.timeout },
      API_REQUEST_FIELDS,
    ),
    'invalid_input',
    'invalid health check',
  );
  let target: URL;
  try {
    target = new URL(share.spec?.target ?? '');
  } catch {
    throw badInput(`share ${args.shareToken} has no valid target URL`, 'healthcheck_unsupported');
  }
  return httpHealthCheck({ target, verb: args.httpVerb, ...limits });
}
