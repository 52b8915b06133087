import { setTimeout as sleep } from 'node:timers/promises';
import type { AccessEntry, AgentStatus, ShareEntry } from '../agent.ts';
import { DEFAULT_HEALTHCHECK_TIMEOUT_MS, httpHealthCheck, type HealthCheckResult } from '../healthcheck.ts';
import { parseDuration } from '../../lib/duration.ts';
import { SvcError, badInput, notFound } from '../../lib/errors.ts';
import { compileGlob } from '../../lib/glob.ts';
import type { Logger } from '../../lib/logger.ts';
import { isNotFound, type KubeClient } from '../../lib/kube/client.ts';
import {
  ACCESSES,
  SHARES,
  resourcePath,
  type Access,
  type AccessSpec,
  type Condition,
  type KubeObject,
  type Share,
  type ShareSpec,
} from '../../lib/kube/resources.ts';
import { deriveToken, newToken } from '../../lib/token.ts';
import type { RemoteExecutor, RemoteHealthCheckArgs, RemoteShareArgs } from './executor.ts';

/** Field manager and managed-by label of the objects the environment agent creates. */
export const ENVIRONMENT_AGENT = 'svc-environment-agent';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const DEFAULT_BIND_PORT = 8080;
const MAX_HEALTHCHECK_TIMEOUT_MS = 5 * 60_000;

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
 * the operator's `Ready` status to answer with `frontendEndpoints` (an invalid spec is deleted again
 * and answered with the operator's message); `status` lists every Share and Access in the namespace.
 */
export function kubeExecutor(options: KubeExecutorOptions): RemoteExecutor {
  const { client, namespace, logger } = options;
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  const sharesPath = resourcePath(SHARES, namespace);
  const accessesPath = resourcePath(ACCESSES, namespace);

  const listAll = async <T extends KubeObject>(path: string): Promise<T[]> => {
    const out: T[] = [];
    let next: string | undefined;
    do {
      const page = await client.list<T>(path, { limit: 500, continue: next });
      out.push(...page.items);
      next = page.metadata.continue || undefined;
    } while (next);
    return out;
  };

  const create = async <T extends KubeObject>(path: string, object: KubeObject): Promise<T> =>
    (await client.request('POST', path, { query: { fieldManager: ENVIRONMENT_AGENT }, body: object })) as T;

  const remove = async (path: string, name: string): Promise<void> => {
    try {
      await client.delete(`${path}/${encodeURIComponent(name)}`);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  };

  /** Polls the object until the operator reports Ready for its generation; undefined on timeout. */
  const awaitReady = async <T extends Share | Access>(
    path: string,
    name: string,
    settled: (ready: Condition) => boolean,
  ): Promise<{ object: T; ready: Condition } | undefined> => {
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      let object: T | undefined;
      try {
        object = await client.get<T>(`${path}/${encodeURIComponent(name)}`);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      const ready = object?.status?.conditions?.find((c) => c.type === 'Ready');
      if (object && ready && object.status?.observedGeneration === object.metadata.generation && settled(ready)) {
        return { object, ready };
      }
      if (Date.now() > deadline) return undefined;
      await sleep(200);
    }
  };

  const findShare = async (token: string): Promise<Share | undefined> =>
    (await listAll<Share>(sharesPath)).find((s) => shareToken(s) === token);

  return {
    async share(args) {
      const spec = shareSpecFromArgs(args, newToken());
      const name = `remote-${spec.token}`;
      await create(sharesPath, {
        apiVersion: 'svc.dev/v1alpha1',
        kind: 'Share',
        metadata: { name, namespace, labels: { [MANAGED_BY_LABEL]: ENVIRONMENT_AGENT } },
        spec,
      });
      logger.info({ share: name, token: spec.token }, 'environment agent: created Share');
      const done = await awaitReady<Share>(
        sharesPath,
        name,
        (c) => c.status === 'True' || c.reason === 'InvalidSpec' || c.reason === 'TokenConflict',
      );
      if (!done) {
        throw new SvcError(
          'share_not_ready',
          `Share ${namespace}/${name} was created but is not Ready after ${readyTimeoutMs} ms (is the operator running?)`,
          { status: 504 },
        );
      }
      if (done.ready.status !== 'True') {
        await remove(sharesPath, name);
        throw badInput(`the operator refused the share: ${done.ready.message}`, 'invalid_share');
      }
      return { token: spec.token, frontendEndpoints: done.object.status?.frontendEndpoints ?? [] };
    },

    async unshare({ token }) {
      const share = await findShare(token);
      if (!share) throw notFound(`unknown share token ${JSON.stringify(token)}`, 'unknown_share');
      await remove(sharesPath, share.metadata.name);
      logger.info({ share: share.metadata.name, token }, 'environment agent: deleted Share');
    },

    async status(): Promise<AgentStatus> {
      const [shares, accesses] = await Promise.all([listAll<Share>(sharesPath), listAll<Access>(accessesPath)]);
      const live = <T extends KubeObject>(list: T[]) => list.filter((o) => !o.metadata.deletionTimestamp);
      const shareEntries = live(shares).map(shareEntry);
      const accessEntries = live(accesses).map(accessEntry);
      return {
        shares: shareEntries.length ? shareEntries : null,
        accesses: accessEntries.length ? accessEntries : null,
      };
    },

    async access(args) {
      const spec = accessSpecFromArgs(args);
      if (!(await findShare(spec.shareToken))) {
        throw notFound(`unknown share token ${JSON.stringify(spec.shareToken)}`, 'unknown_share');
      }
      const name = `remote-access-${newToken()}`;
      await create(accessesPath, {
        apiVersion: 'svc.dev/v1alpha1',
        kind: 'Access',
        metadata: { name, namespace, labels: { [MANAGED_BY_LABEL]: ENVIRONMENT_AGENT } },
        spec,
      });
      // ShareNotFound is transient here (the share exists; the operator's cache may lag behind).
      const done = await awaitReady<Access>(
        accessesPath,
        name,
        (c) => c.status === 'True' || c.reason !== 'ShareNotFound',
      );
      if (!done || done.ready.status !== 'True') {
        await remove(accessesPath, name);
        if (!done) {
          throw new SvcError('access_not_ready', `Access ${namespace}/${name} did not become Ready`, { status: 504 });
        }
        throw badInput(`the operator refused the access: ${done.ready.message}`, 'invalid_access');
      }
      logger.info({ access: name, shareToken: spec.shareToken }, 'environment agent: created Access');
      return accessEntry(done.object);
    },

    async unaccess({ token }) {
      const access = (await listAll<Access>(accessesPath)).find((a) => accessToken(a) === token);
      if (!access) throw notFound(`unknown access token ${JSON.stringify(token)}`, 'unknown_access');
      await remove(accessesPath, access.metadata.name);
      logger.info({ access: access.metadata.name, token }, 'environment agent: deleted Access');
    },

    async healthcheck(args: RemoteHealthCheckArgs): Promise<HealthCheckResult> {
      const share = await findShare(args.shareToken);
      if (!share) throw notFound(`unknown share token ${JSON.stringify(args.shareToken)}`, 'unknown_share');
      const backendMode = share.spec?.backendMode ?? 'proxy';
      if (backendMode !== 'proxy') {
        throw badInput(
          `share ${args.shareToken} has backend mode ${backendMode}; health checks exist only for proxy backends`,
          'healthcheck_unsupported',
        );
      }
      const expected = args.expectedHttpResponse;
      if (!Number.isInteger(expected) || expected < 100 || expected > 599) {
        throw badInput(`expected status must be an HTTP status code (100-599), got ${JSON.stringify(expected)}`);
      }
      const timeoutMs = args.timeout === undefined ? DEFAULT_HEALTHCHECK_TIMEOUT_MS : parseDuration(args.timeout);
      if (timeoutMs === undefined || timeoutMs <= 0 || timeoutMs > MAX_HEALTHCHECK_TIMEOUT_MS) {
        throw badInput(`timeout: must be a duration between 1ms and 5m, got ${JSON.stringify(args.timeout)}`);
      }
      let target: URL;
      try {
        target = new URL(share.spec?.target ?? '');
      } catch {
        throw badInput(`share ${args.shareToken} has no valid target URL`, 'healthcheck_unsupported');
      }
      return httpHealthCheck({ target, verb: args.httpVerb, path: args.endpoint, expectedStatus: expected, timeoutMs });
    },
  };
}

/**
 * A Share spec from `/agent/share` arguments. Only proxy shares can be created remotely: a web share
 * in a cluster serves a volume (spec.webVolume), which the API cannot name. Every problem is reported
 * at once, with the API's field names.
 */
export function shareSpecFromArgs(args: RemoteShareArgs, token: string): ShareSpec & { token: string } {
  const problems: string[] = [];
  const shareMode = args.shareMode;
  if (shareMode !== 'public' && shareMode !== 'private') {
    problems.push(`shareMode: must be public or private, got ${JSON.stringify(shareMode)}`);
  }
  if (args.backendMode !== 'proxy') {
    problems.push(
      `backendMode: only proxy shares can be created remotely in a Kubernetes environment (a web share serves a volume: create the Share object with spec.webVolume), got ${JSON.stringify(args.backendMode)}`,
    );
  }
  if (!isHttpUrl(args.target)) {
    problems.push(`target: must be an absolute http or https URL, got ${JSON.stringify(args.target)}`);
  }
  const oauthWanted =
    args.oauthProvider !== undefined ||
    args.oauthEmailAddressPatterns !== undefined ||
    args.oauthCheckInterval !== undefined;
  if (oauthWanted && args.oauthProvider === undefined) {
    problems.push('oauthProvider: required when oauthEmailAddressPatterns or oauthCheckInterval is given');
  }
  if (oauthWanted && shareMode !== 'public') problems.push('oauthProvider: OAuth applies to public shares only');
  (args.oauthEmailAddressPatterns ?? []).forEach((pattern, i) => {
    try {
      compileGlob(pattern);
    } catch (err) {
      problems.push(`oauthEmailAddressPatterns[${i}]: ${(err as Error).message}`);
    }
  });
  if (args.oauthCheckInterval !== undefined && parseDuration(args.oauthCheckInterval) === undefined) {
    problems.push(
      `oauthCheckInterval: must be a duration such as 30m or 3h, got ${JSON.stringify(args.oauthCheckInterval)}`,
    );
  }
  if (problems.length > 0) throw badInput(problems.join('; '), 'invalid_share');
  return {
    shareMode: shareMode as 'public' | 'private',
    backendMode: 'proxy',
    target: args.target,
    token,
    ...(args.oauthProvider !== undefined
      ? {
          oauth: {
            provider: args.oauthProvider,
            ...(args.oauthEmailAddressPatterns?.length
              ? { emailAddressPatterns: [...args.oauthEmailAddressPatterns] }
              : {}),
            ...(args.oauthCheckInterval !== undefined ? { checkInterval: args.oauthCheckInterval } : {}),
          },
        }
      : {}),
  };
}

/** An Access spec from `/agent/access` arguments: the port of `bindAddress` becomes spec.bindPort. */
export function accessSpecFromArgs(args: { shareToken: string; bindAddress?: string }): AccessSpec & {
  shareToken: string;
} {
  let bindPort = DEFAULT_BIND_PORT;
  if (args.bindAddress !== undefined) {
    const port = Number(/:(\d{1,5})$/.exec(args.bindAddress)?.[1]);
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw badInput(
        `bindAddress: must be ip:port with a port 1-65535 (the access Service's port), got ${JSON.stringify(args.bindAddress)}`,
      );
    }
    bindPort = port;
  }
  return { shareToken: args.shareToken, bindPort };
}

/** The token a Share is served under: spec.token, else the operator's status, else its derivation from the uid. */
export function shareToken(share: Share): string {
  return share.spec?.token ?? share.status?.token ?? deriveToken(share.metadata.uid ?? '');
}

function accessToken(access: Access): string {
  return access.status?.frontendToken ?? deriveToken(access.metadata.uid ?? '');
}

/** A Share as a status entry (seed: "Share entry (in the status response)"). */
export function shareEntry(share: Share): ShareEntry {
  return {
    token: shareToken(share),
    shareMode: share.spec?.shareMode ?? 'public',
    backendMode: share.spec?.backendMode ?? 'proxy',
    backendEndpoint: share.spec?.target ?? '',
    frontendEndpoints: share.status?.frontendEndpoints ?? [],
  };
}

/** An Access as a status entry: it listens on its Service's port; `endpoint` is its in-cluster URL. */
export function accessEntry(access: Access): AccessEntry {
  return {
    token: accessToken(access),
    shareToken: access.spec?.shareToken ?? '',
    bindAddress: `0.0.0.0:${access.spec?.bindPort ?? DEFAULT_BIND_PORT}`,
    endpoint: access.status?.endpoint ?? '',
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}
