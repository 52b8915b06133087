import type { ConditionReason } from '../lib/error-codes.ts';
import { errorText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { KubeApiError, type KubeClient } from '../lib/kube/client.ts';
import { PODS, resourcePath, type Condition, type KubeObject } from '../lib/kube/resources.ts';
import { findCondition } from './conditions.ts';
import { routeNotServing, type ParentRef } from './share-route.ts';

/** Why a child does not serve yet, for a Ready=False condition; undefined when it serves. */
export interface NotServing {
  readonly reason: ConditionReason;
  readonly message: string;
  /** A problem of the pods (a wrong image, a crashing container), not the wait of a normal start. */
  readonly problem: boolean;
}

interface DeploymentLike extends KubeObject {
  status?: {
    observedGeneration?: number;
    availableReplicas?: number;
    conditions?: Condition[];
  };
}

interface ContainerStatus {
  name: string;
  state?: { waiting?: { reason?: string; message?: string } };
  lastState?: { terminated?: { reason?: string; exitCode?: number } };
}

interface PodLike extends KubeObject {
  status?: {
    conditions?: Condition[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

/** Waiting reasons a kubelet reports that will not clear by themselves, by the condition reason they map to. */
const WAITING_PROBLEMS: Readonly<Record<string, ConditionReason>> = {
  ErrImagePull: 'ImagePullFailed',
  ImagePullBackOff: 'ImagePullFailed',
  InvalidImageName: 'ImagePullFailed',
  ErrImageNeverPull: 'ImagePullFailed',
  CrashLoopBackOff: 'ContainerCrashing',
  CreateContainerConfigError: 'ContainerConfigError',
  CreateContainerError: 'ContainerConfigError',
  RunContainerError: 'ContainerConfigError',
};

/** Kubelet and scheduler messages are kept, cut to this length (they name images and objects, never credentials). */
const MESSAGE_LIMIT = 400;

/**
 * Whether a Deployment serves: its controller has seen the current spec (`observedGeneration`),
 * reports at least one available replica and its `Available` condition is True. A Deployment that
 * does not is described from its own conditions (a `ReplicaFailure` such as a quota or an admission
 * refusal, a `ProgressDeadlineExceeded`).
 */
export function deploymentNotServing(deployment: KubeObject | undefined, name: string): NotServing | undefined {
  if (!deployment)
    return { reason: 'DeploymentUnavailable', message: `Deployment ${name} is not created yet`, problem: false };
  const { status } = deployment as DeploymentLike;
  const generation = deployment.metadata.generation ?? 0;
  const available = findCondition(status?.conditions, 'Available');
  if (
    (status?.observedGeneration ?? 0) >= generation &&
    (status?.availableReplicas ?? 0) >= 1 &&
    available?.status === 'True'
  )
    return undefined;
  const failure = findCondition(status?.conditions, 'ReplicaFailure');
  if (failure?.status === 'True')
    return {
      reason: 'DeploymentUnavailable',
      message: clip(`Deployment ${name} cannot create its pod: ${failure.message || failure.reason}`),
      problem: true,
    };
  const progressing = findCondition(status?.conditions, 'Progressing');
  if (progressing?.status === 'False')
    return {
      reason: 'DeploymentUnavailable',
      message: clip(`Deployment ${name} is not progressing: ${progressing.message || progressing.reason}`),
      problem: true,
    };
  return {
    reason: 'DeploymentUnavailable',
    message: `Deployment ${name} has no available replica yet`,
    problem: false,
  };
}

/**
 * The first problem the pods report that keeps them from serving: a container waiting for a reason
 * that will not clear by itself (image pull, crash loop, bad container config) or a pod the
 * scheduler cannot place. Undefined when the pods are just starting.
 */
export function podProblem(pods: readonly KubeObject[]): NotServing | undefined {
  for (const pod of pods as PodLike[]) {
    const name = pod.metadata.name;
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const c of statuses) {
      const waiting = c.state?.waiting;
      const reason = waiting?.reason ? WAITING_PROBLEMS[waiting.reason] : undefined;
      if (!reason || !waiting) continue;
      const last = c.lastState?.terminated;
      const exit = last ? ` (last exit ${last.exitCode ?? '?'}${last.reason ? ` ${last.reason}` : ''})` : '';
      const detail = waiting.message ? `: ${waiting.message}` : '';
      return {
        reason,
        message: clip(`pod ${name} container ${c.name}: ${waiting.reason ?? ''}${exit}${detail}`),
        problem: true,
      };
    }
    const scheduled = findCondition(pod.status?.conditions, 'PodScheduled');
    if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable')
      return {
        reason: 'Unschedulable',
        message: clip(`pod ${name} cannot be scheduled: ${scheduled.message || scheduled.reason}`),
        problem: true,
      };
  }
  return undefined;
}

/**
 * Whether an Ingress is admitted: its controller wrote a load-balancer address. Only asked when the
 * operator is told the cluster's ingress controller reports one (`--ingress-await-address`); many
 * controllers never write it, and waiting for it there would leave every share not ready.
 */
export function ingressNotServing(ingress: KubeObject | undefined, name: string): NotServing | undefined {
  const addresses = (ingress as { status?: { loadBalancer?: { ingress?: unknown[] } } } | undefined)?.status
    ?.loadBalancer?.ingress;
  if (addresses && addresses.length > 0) return undefined;
  return {
    reason: 'IngressPending',
    message: `Ingress ${name} has no load-balancer address yet (its ingress controller has not admitted it)`,
    problem: false,
  };
}

/**
 * Lists the pods selected by `selector` in `namespace` (one request, only while a Deployment is
 * unavailable, so pods are never cached). Without the right to list pods, or on any error, the
 * answer is "no pods known" and the Deployment's own state is reported.
 */
export async function readPods(
  client: KubeClient,
  logger: Logger,
  namespace: string,
  selector: Record<string, string>,
): Promise<KubeObject[]> {
  const labelSelector = Object.entries(selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  try {
    return (await client.list(resourcePath(PODS, namespace), { labelSelector, limit: 20 })).items;
  } catch (err) {
    const level = err instanceof KubeApiError && err.status === 403 ? 'debug' : 'warn';
    logger[level]({ namespace, labelSelector }, `pods not readable: ${errorText(err)}`);
    return [];
  }
}

/**
 * When to look at a child that does not serve yet again: pods are not watched, so a pod problem
 * shows up only when looked for. Soon after the first Ready=False, then less often the longer it
 * lasts (half its age, 5 s to 2 min), so thousands of stuck shares cost few requests.
 */
export function recheckAfterMs(readySince: string | undefined, now = Date.now()): number {
  const since = readySince ? Date.parse(readySince) : NaN;
  const age = Number.isNaN(since) ? 0 : Math.max(0, now - since);
  return Math.min(120_000, Math.max(5_000, Math.round(age / 2)));
}

function clip(text: string): string {
  return text.length > MESSAGE_LIMIT ? `${text.slice(0, MESSAGE_LIMIT - 1)}…` : text;
}

/** The children whose state decides whether a Share or Access serves. */
export interface ServingChildren {
  readonly namespace: string;
  readonly deployment: { readonly name: string; readonly live: KubeObject | undefined };
  /** The pod labels of the Deployment, to read its pods while it is unavailable. */
  readonly podSelector: Record<string, string>;
  /** Present only when the Ingress must be admitted too (an address is awaited). */
  readonly ingress?: { readonly name: string; readonly live: KubeObject | undefined };
  /** The share's HTTPRoute, which every configured Gateway must accept. */
  readonly route?: {
    readonly name: string;
    readonly live: KubeObject | undefined;
    readonly parentRefs: readonly ParentRef[];
  };
}

/**
 * Why the children do not serve yet, or undefined when they do: the Deployment first (described by
 * its pods' problem when they have one), then the HTTPRoute's acceptance, or the Ingress when its
 * address is awaited.
 */
export async function notServing(
  client: KubeClient,
  logger: Logger,
  children: ServingChildren,
): Promise<NotServing | undefined> {
  const { namespace, deployment, ingress } = children;
  const unavailable = deploymentNotServing(deployment.live, deployment.name);
  if (unavailable) {
    if (unavailable.problem || !deployment.live) return unavailable;
    return podProblem(await readPods(client, logger, namespace, children.podSelector)) ?? unavailable;
  }
  if (children.route) return routeNotServing(children.route.live, children.route.name, children.route.parentRefs);
  return ingress ? ingressNotServing(ingress.live, ingress.name) : undefined;
}
