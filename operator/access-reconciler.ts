import { problemText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { applyChild } from './apply.ts';
import type { Caches } from './caches.ts';
import type { ReconcileResult } from './controller.ts';
import { ObjectReconciler } from './object-reconciler.ts';
import type { EventRecorder } from './events.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import {
  ACCESSES,
  ACCESS_LABEL,
  DEPLOYMENTS,
  SERVICES,
  objectKey,
  splitKey,
  type Access,
  type AccessStatus,
  type Share,
} from '../lib/kube/resources.ts';
import {
  accessChildName,
  accessEndpoint,
  desiredAccessChildren,
  findShare,
  validateAccess,
} from './access-children.ts';
import { deriveToken } from '../lib/token.ts';
import { notServing as readinessOf } from './readiness.ts';
import { createdSuffix, deploymentAvailable } from './status.ts';
import type { Change, Watches } from './watches.ts';
import type { PodSettings } from './pod-settings.ts';

export interface AccessReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly image: string;
  /** Settings of the access pods (operator/pod-settings.ts). */
  readonly pods?: PodSettings;
}

/** The status fields this reconciler writes besides the conditions. */
type AccessStatusFields = Pick<AccessStatus, 'frontendToken' | 'endpoint'>;

/**
 * Access → Deployment + Service of a private access frontend forwarding to a private Share in the
 * same namespace (found by its token). A missing or public share is `Ready=False` with a reason; the
 * Share watch wakes the Access when that changes. `Ready` means the access frontend answers: its
 * Deployment is available, else Ready=False says why (operator/readiness.ts).
 */
export class AccessReconciler extends ObjectReconciler<AccessReconcilerDeps, Access, AccessStatusFields> {
  readonly watches: Watches;

  constructor(deps: AccessReconcilerDeps) {
    super(deps, ACCESSES, 'access');
    const { accesses, shares, deployments, services } = deps.caches;
    this.watches = {
      for: accesses,
      owns: [deployments, services],
      watches: [{ source: shares, map: (change) => this.accessesOf(change) }],
    };
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { caches, client, image } = this.deps;
    const { namespace, name } = splitKey(key);
    const access = caches.accesses.get(namespace, name);
    if (!access || access.metadata.deletionTimestamp) return { result: 'success' };

    const validation = validateAccess(access);
    if (!validation.ok)
      return await this.report.notReady(
        access,
        {},
        'InvalidSpec',
        validation.problems.map(problemText).join('; '),
        'invalid',
      );
    const valid = validation.value;
    const share = findShare(caches.shares.list(), namespace, valid.shareToken);
    if (!share)
      return await this.report.notReady(
        access,
        {},
        'ShareNotFound',
        `no Share with token ${valid.shareToken} in namespace ${namespace}`,
        'waiting',
      );
    if ((share.spec?.shareMode ?? 'public') !== 'private') {
      return await this.report.notReady(
        access,
        {},
        'ShareNotPrivate',
        `Share ${share.metadata.name} (token ${valid.shareToken}) is public; an Access reaches private shares only`,
        'waiting',
      );
    }

    const children = desiredAccessChildren(access, valid, share, image, this.deps.pods);
    const childName = accessChildName(name);
    const created: string[] = [];
    const [deployment, service] = await Promise.all([
      applyChild(client, DEPLOYMENTS, children.deployment, caches.deployments.get(namespace, childName)),
      applyChild(client, SERVICES, children.service, caches.services.get(namespace, childName)),
    ]);
    if (deployment === 'created') created.push(`Deployment ${childName}`);
    if (service === 'created') created.push(`Service ${childName}`);

    const endpoint = accessEndpoint(valid);
    const live = caches.deployments.get(namespace, childName);
    const notServing = await readinessOf(client, this.deps.logger, {
      namespace,
      deployment: { name: childName, live },
      podSelector: { [ACCESS_LABEL]: name },
    });
    const { outcome, becameReady } = await this.report.serving(
      access,
      { frontendToken: deriveToken(access.metadata.uid ?? ''), endpoint },
      notServing,
      `Deployment ${childName} available; forwarding to Share ${share.metadata.name}`,
      [deploymentAvailable(live, 'Deployment')],
    );
    if (becameReady)
      this.deps.events.record(access, 'Normal', 'Ready', `access ready at ${endpoint}${createdSuffix(created)}`);
    else if (created.length > 0) this.deps.events.record(access, 'Normal', 'Created', `created ${created.join(', ')}`);
    return outcome;
  }

  /**
   * The Accesses in a Share's namespace, when the Share appears, goes, or changes what an Access
   * finds by (its token, whether it is private): one of them may have been waiting for it.
   */
  private accessesOf(change: Change<Share>): string[] {
    if (change.type === 'updated') {
      const { old, object: s } = change;
      if (old.status?.token === s.status?.token && old.spec?.shareMode === s.spec?.shareMode) return [];
    }
    const namespace = change.object.metadata.namespace;
    return this.deps.caches.accesses
      .list()
      .filter((a) => a.metadata.namespace === namespace)
      .map(objectKey);
  }
}
