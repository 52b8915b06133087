import type { Logger } from '../lib/logger.ts';
import { applyChild, writeStatus } from './apply.ts';
import type { Caches } from './caches.ts';
import { findCondition, statusWith } from './conditions.ts';
import type { ReconcileResult, Reconciler } from './controller.ts';
import type { EventRecorder } from './events.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import {
  ACCESSES,
  DEPLOYMENTS,
  SERVICES,
  splitKey,
  type Access,
  type AccessStatus,
  type Condition,
} from '../lib/kube/resources.ts';
import {
  accessChildName,
  accessEndpoint,
  desiredAccessChildren,
  findShare,
  validateAccess,
} from './access-children.ts';
import { deriveToken } from '../lib/token.ts';

export interface AccessReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly image: string;
}

/**
 * Access → Deployment + Service of a private access frontend forwarding to a private Share in the
 * same namespace (found by its token). A missing or public share is `Ready=False` with a reason; the
 * Share watch wakes the Access when that changes, so there is no polling.
 */
export class AccessReconciler implements Reconciler {
  readonly kind = 'Access';
  private readonly deps: AccessReconcilerDeps;

  constructor(deps: AccessReconcilerDeps) {
    this.deps = deps;
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { caches, client, image } = this.deps;
    const { namespace, name } = splitKey(key);
    const access = caches.accesses.get(namespace, name);
    if (!access || access.metadata.deletionTimestamp) return { result: 'success' };

    const validation = validateAccess(access);
    if (!validation.ok) return await this.notReady(access, 'InvalidSpec', validation.problems.join('; '), 'invalid');
    const valid = validation.access;
    const share = findShare(caches.shares.list(), namespace, valid.shareToken);
    if (!share)
      return await this.notReady(
        access,
        'ShareNotFound',
        `no Share with token ${valid.shareToken} in namespace ${namespace}`,
        'waiting',
      );
    if ((share.spec?.shareMode ?? 'public') !== 'private') {
      return await this.notReady(
        access,
        'ShareNotPrivate',
        `Share ${share.metadata.name} (token ${valid.shareToken}) is public; an Access reaches private shares only`,
        'waiting',
      );
    }

    const children = desiredAccessChildren(access, valid, share, image);
    const childName = accessChildName(name);
    const created: string[] = [];
    const [deployment, service] = await Promise.all([
      applyChild(client, DEPLOYMENTS, children.deployment, caches.deployments.get(namespace, childName)),
      applyChild(client, SERVICES, children.service, caches.services.get(namespace, childName)),
    ]);
    if (deployment === 'created') created.push(`Deployment ${childName}`);
    if (service === 'created') created.push(`Service ${childName}`);

    const wasReady = findCondition(access.status?.conditions, 'Ready')?.status === 'True';
    const endpoint = accessEndpoint(valid);
    const status = this.status(
      access,
      { frontendToken: deriveToken(access.metadata.uid ?? ''), endpoint },
      {
        type: 'Ready',
        status: 'True',
        reason: 'ChildrenApplied',
        message: `Deployment and Service applied; forwarding to Share ${share.metadata.name}`,
      },
    );
    await writeStatus(client, ACCESSES, access, access.status, status as Record<string, unknown>);
    if (!wasReady)
      this.deps.events.record(
        access,
        'Normal',
        'Ready',
        `access ready at ${endpoint}${created.length ? `; created ${created.join(', ')}` : ''}`,
      );
    return { result: 'success' };
  }

  private async notReady(
    access: Access,
    reason: string,
    message: string,
    result: 'invalid' | 'waiting',
  ): Promise<ReconcileResult> {
    const previous = findCondition(access.status?.conditions, 'Ready');
    const status = this.status(access, {}, { type: 'Ready', status: 'False', reason, message });
    await writeStatus(this.deps.client, ACCESSES, access, access.status, status as Record<string, unknown>);
    if (previous?.reason !== reason || previous.message !== message || previous.status !== 'False') {
      this.deps.events.record(access, 'Warning', reason, message);
      this.deps.logger.info(
        { access: `${access.metadata.namespace}/${access.metadata.name}`, reason },
        'access not ready',
      );
    }
    return { result };
  }

  private status(
    access: Access,
    fields: Pick<AccessStatus, 'frontendToken' | 'endpoint'>,
    ready: Omit<Condition, 'lastTransitionTime'>,
  ): AccessStatus {
    return statusWith(access, fields, [ready]);
  }
}
