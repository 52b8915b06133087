import type { ShareIngressOptions } from './options.ts';
import type { Logger } from '../lib/logger.ts';
import { applyChild, deleteChild, writeStatus, type ApplyOutcome } from './apply.ts';
import type { Caches, InstallationView } from './caches.ts';
import { findCondition, statusWith } from './conditions.ts';
import type { ReconcileResult, Reconciler } from './controller.ts';
import type { EventRecorder } from './events.ts';
import { frontendEndpoint } from './installation.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import {
  DEPLOYMENTS,
  INGRESSES,
  SECRETS,
  SERVICES,
  SHARES,
  splitKey,
  type Condition,
  type KubeObject,
  type Resource,
  type Share,
  type ShareStatus,
} from '../lib/kube/resources.ts';
import { childName, desiredShareChildren, frontendSecretName, validateShare } from './share-children.ts';

export interface ShareReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly installation: InstallationView;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly image: string;
  readonly domain: string;
  readonly ingress?: ShareIngressOptions;
}

/**
 * Share → Deployment (agent, plus the OAuth sidecar when `spec.oauth` is set), Service, Ingress for
 * `<token>.<domain>` (public shares) and the sidecar's config Secret (OAuth shares). No finalizer:
 * every child carries a controller ownerReference, so the garbage collector removes them with the
 * Share. `Ready` means the children are applied; `Available` mirrors the Deployment's.
 */
export class ShareReconciler implements Reconciler {
  readonly kind = 'Share';
  private readonly deps: ShareReconcilerDeps;

  constructor(deps: ShareReconcilerDeps) {
    this.deps = deps;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { caches, installation, client, domain, image, ingress } = this.deps;
    const { namespace, name } = splitKey(key);
    const share = caches.shares.get(namespace, name);
    if (!share || share.metadata.deletionTimestamp) return { result: 'success' };

    const install = installation.current();
    const validation = validateShare(share, install?.ok ? install.installation : undefined);
    if (!validation.ok) {
      return await this.notReady(
        share,
        validation.reason,
        validation.problems.join('; '),
        validation.reason === 'InvalidSpec' ? 'invalid' : 'waiting',
      );
    }
    const valid = validation.share;
    const holder = this.tokenHolder(share, valid.token);
    if (holder)
      return await this.notReady(
        share,
        'TokenConflict',
        `token ${valid.token} is already used by Share ${holder}`,
        'invalid',
      );

    const children = desiredShareChildren(share, valid, {
      image,
      domain,
      ...(ingress ? { ingress } : {}),
      ...(install?.ok ? { installation: install.installation } : {}),
    });
    const created: string[] = [];
    const apply = async (resource: Resource, desired: KubeObject | undefined, childName: string): Promise<void> => {
      const live = this.live(resource, namespace, childName);
      if (!desired) {
        if (live) await deleteChild(client, resource, live);
        return;
      }
      const outcome: ApplyOutcome = await applyChild(client, resource, desired, live);
      if (outcome === 'created') created.push(`${resource.kind} ${childName}`);
    };
    // The config Secret first: the pod mounts it.
    await apply(SECRETS, children.secret, frontendSecretName(name));
    await Promise.all([
      apply(DEPLOYMENTS, children.deployment, childName(name)),
      apply(SERVICES, children.service, childName(name)),
      apply(INGRESSES, children.ingress, childName(name)),
    ]);

    const endpoints =
      valid.shareMode === 'public'
        ? [frontendEndpoint(valid.token, domain, install?.ok ? install.installation.oauth.endpointUrl : undefined)]
        : [];
    const parts = [
      'Deployment',
      'Service',
      ...(children.ingress ? ['Ingress'] : []),
      ...(children.secret ? ['Secret'] : []),
    ];
    const ready = {
      type: 'Ready',
      status: 'True',
      reason: 'ChildrenApplied',
      message: `${parts.join(', ')} applied`,
    } as const;
    const wasReady = findCondition(share.status?.conditions, 'Ready')?.status === 'True';
    const status = this.status(share, { token: valid.token, frontendEndpoints: endpoints }, [
      ready,
      this.available(namespace, name),
    ]);
    await writeStatus(client, SHARES, share, share.status, status as Record<string, unknown>);
    if (!wasReady) {
      const url = endpoints[0] ? ` at ${endpoints[0]}` : '';
      this.deps.events.record(
        share,
        'Normal',
        'Ready',
        `share ${valid.token} is ready${url}${created.length ? `; created ${created.join(', ')}` : ''}`,
      );
    } else if (created.length > 0) {
      this.deps.events.record(share, 'Normal', 'Created', `created ${created.join(', ')}`);
    }
    return { result: 'success' };
  }

  /** Ready=False with a reason; a Warning Event only when the reason or message changes (no storm). */
  private async notReady(
    share: Share,
    reason: string,
    message: string,
    result: 'invalid' | 'waiting',
  ): Promise<ReconcileResult> {
    const previous = findCondition(share.status?.conditions, 'Ready');
    const token = reason === 'InvalidSpec' ? undefined : share.status?.token;
    const status = this.status(share, { ...(token ? { token } : {}), frontendEndpoints: [] }, [
      { type: 'Ready', status: 'False', reason, message },
    ]);
    await writeStatus(this.deps.client, SHARES, share, share.status, status as Record<string, unknown>);
    if (previous?.reason !== reason || previous.message !== message || previous.status !== 'False') {
      this.deps.events.record(share, 'Warning', reason, message);
      this.deps.logger.info({ share: `${share.metadata.namespace}/${share.metadata.name}`, reason }, 'share not ready');
    }
    return { result };
  }

  private status(
    share: Share,
    fields: Pick<ShareStatus, 'token' | 'frontendEndpoints'>,
    conditions: Omit<Condition, 'lastTransitionTime'>[],
  ): ShareStatus {
    return statusWith(share, fields, conditions);
  }

  /** `Available` mirrors the Deployment's own condition (Unknown until its controller reports). */
  private available(namespace: string, name: string): Omit<Condition, 'lastTransitionTime'> {
    const deployment = this.live(DEPLOYMENTS, namespace, childName(name)) as
      { status?: { conditions?: Condition[] } } | undefined;
    const c = deployment?.status?.conditions?.find((d) => d.type === 'Available');
    if (!c)
      return {
        type: 'Available',
        status: 'Unknown',
        reason: 'Pending',
        message: 'the Deployment has not reported availability yet',
      };
    return { type: 'Available', status: c.status, reason: c.reason || 'Deployment', message: c.message || '' };
  }

  /** Another Share created earlier that holds the same token (tokens are host names: unique). */
  private tokenHolder(share: Share, token: string): string | undefined {
    const mine = `${share.metadata.creationTimestamp ?? ''}/${share.metadata.namespace}/${share.metadata.name}`;
    for (const other of this.deps.caches.shares.list()) {
      if (other.metadata.uid === share.metadata.uid) continue;
      const otherToken = other.spec?.token ?? other.status?.token;
      if (otherToken !== token) continue;
      const theirs = `${other.metadata.creationTimestamp ?? ''}/${other.metadata.namespace}/${other.metadata.name}`;
      if (theirs < mine) return `${other.metadata.namespace}/${other.metadata.name}`;
    }
    return undefined;
  }

  private live(resource: Resource, namespace: string, name: string): KubeObject | undefined {
    const cache = {
      Deployment: this.deps.caches.deployments,
      Service: this.deps.caches.services,
      Ingress: this.deps.caches.ingresses,
      Secret: this.deps.caches.secrets,
    }[resource.kind];
    return cache?.get(namespace, name);
  }
}
