import type { ShareIngressOptions } from './options.ts';
import type { ConditionReason } from '../lib/error-codes.ts';
import { problemText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { applyChild, deleteChild, type ApplyOutcome } from './apply.ts';
import type { Caches } from './caches.ts';
import type { ReconcileResult } from './controller.ts';
import { ObjectReconciler } from './object-reconciler.ts';
import type { EventRecorder } from './events.ts';
import { frontendEndpoint, type Installation } from './frontend-secret.ts';
import type { InstallationView } from './frontend-secret-state.ts';
import { isNotFound, type KubeClient } from '../lib/kube/client.ts';
import {
  DEPLOYMENTS,
  HTTP_ROUTES,
  INGRESSES,
  SECRETS,
  SERVICES,
  SHARES,
  SHARE_LABEL,
  objectKey,
  splitKey,
  type KubeObject,
  type Resource,
  type Share,
  type ShareStatus,
} from '../lib/kube/resources.ts';
import {
  childName,
  desiredShareChildren,
  frontendSecretName,
  type ShareChildren,
  type ValidShare,
} from './share-children.ts';
import { ShareMemo } from './share-memo.ts';
import { ShareTokens } from './share-tokens.ts';
import { AuthQuota, overQuotaMessage } from './auth-quota.ts';
import { shareTlsConfigured, tlsCondition } from './share-tls.ts';
import { routeTlsCondition } from './share-route.ts';
import { notServing as readinessOf, recheckAfterMs } from './readiness.ts';
import { findCondition } from './conditions.ts';
import { createdSuffix, deploymentAvailable } from './status.ts';
import type { Change, Watches } from './watches.ts';
import type { PodSettings } from './pod-settings.ts';

export interface ShareReconcilerDeps {
  readonly client: KubeClient;
  readonly caches: Caches;
  readonly installation: InstallationView;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly image: string;
  readonly domain: string;
  readonly ingress?: ShareIngressOptions;
  /** Settings of the share pods (operator/pod-settings.ts). */
  readonly pods?: PodSettings;
  /** Shared with the auth-config reconciler, which validates the same Shares; one of its own if absent. */
  readonly memo?: ShareMemo;
  /** Bytes of the auth endpoint's share list one namespace's OAuth Shares may take (operator/auth-quota.ts). */
  readonly quotaBytes?: number;
}

/** A valid Share and the children it is reconciled into. */
interface Desired {
  readonly valid: ValidShare;
  readonly children: ShareChildren;
}

/** Why a Share has no children: the Ready=False reason, message and kind of failure. */
type Refusal = [reason: ConditionReason, message: string, result: 'invalid' | 'waiting'];

/** The status fields this reconciler writes besides the conditions. */
type ShareStatusFields = Pick<ShareStatus, 'token' | 'frontendEndpoints'>;

/**
 * Share → Deployment (agent, plus the OAuth sidecar when `spec.oauth` is set), Service, Ingress for
 * `<token>.<domain>` (public shares; an HTTPRoute instead with `--share-http-route`, whose Gateways
 * must accept it before the share is Ready) and the sidecar's config Secret (OAuth shares). No finalizer:
 * every child carries a controller ownerReference, so the garbage collector removes them with the
 * Share. `Ready` means the share answers: its Deployment is available (and, when the operator is
 * told the ingress controller reports addresses, its Ingress has one); otherwise Ready=False says
 * why, from the Deployment and its pods (operator/readiness.ts). `Available` mirrors the
 * Deployment's own condition.
 */
export class ShareReconciler extends ObjectReconciler<ShareReconcilerDeps, Share, ShareStatusFields> {
  readonly watches: Watches;
  private readonly memo: ShareMemo;
  private readonly tokens: ShareTokens;
  private readonly quota: AuthQuota;

  constructor(deps: ShareReconcilerDeps) {
    super(deps, SHARES, 'share');
    const { shares, deployments, services, ingresses, secrets, frontendSecret, httpRoutes } = deps.caches;
    this.memo = deps.memo ?? new ShareMemo(shares);
    this.tokens = new ShareTokens(shares);
    this.quota = new AuthQuota(shares, this.memo, deps.quotaBytes);
    this.watches = {
      for: shares,
      owns: [deployments, services, ingresses, secrets, ...(httpRoutes ? [httpRoutes] : [])],
      watches: [
        // A deleted Share frees its token: a Share refused it (TokenConflict) may take it now.
        { source: shares, map: (change) => this.sharingToken(change) },
        // An OAuth Share added, deleted or respecified moves others of its namespace across the quota.
        { source: shares, map: (change) => this.quota.affected(change) },
        // New installation settings (OAuth providers, endpoint_url) change every Share's children.
        { source: frontendSecret, map: () => shares.list().map(objectKey) },
      ],
    };
  }

  async reconcile(key: string): Promise<ReconcileResult> {
    const { namespace, name } = splitKey(key);
    const share = this.deps.caches.shares.get(namespace, name);
    if (!share || share.metadata.deletionTimestamp) return { result: 'success' };
    const install = this.deps.installation.current();
    const installed = install?.ok ? install.value : undefined;
    const desired = this.desired(share, installed);
    if ('refused' in desired) return await this.notReady(share, ...desired.refused);
    const { created, routeMissing } = await this.apply(namespace, name, desired.children);
    if (routeMissing) {
      // No watch wakes the Share when the CRD is installed: look again, less often the longer it lasts.
      const since = findCondition(share.status?.conditions, 'Ready');
      const after = recheckAfterMs(since?.reason === 'RouteApiMissing' ? since.lastTransitionTime : undefined);
      return await this.notReady(share, 'RouteApiMissing', routeMissing, 'waiting', after);
    }
    return await this.reportStatus(share, desired, created, installed);
  }

  /**
   * The valid spec and its children, or why there are none: an invalid spec, an installation not
   * ready for an OAuth share, a token an older Share holds, or an OAuth share past its namespace's
   * quota of the auth endpoint's share list.
   */
  private desired(share: Share, installed: Installation | undefined): Desired | { refused: Refusal } {
    const validation = this.memo.validate(share, installed);
    if (!validation.ok) {
      const waiting = validation.problems.some((p) => p.code === 'not_ready');
      const message = validation.problems.map(problemText).join('; ');
      return {
        refused: waiting ? ['InstallationNotReady', message, 'waiting'] : ['InvalidSpec', message, 'invalid'],
      };
    }
    const valid = validation.value;
    const holder = this.tokenHolder(share, valid.token);
    if (holder)
      return { refused: ['TokenConflict', `token ${valid.token} is already used by Share ${holder}`, 'invalid'] };
    const over = valid.oauth ? this.quota.check(share, installed) : undefined;
    if (over) return { refused: ['AuthQuotaExceeded', overQuotaMessage(over), 'invalid'] };
    const { domain, image, ingress, pods } = this.deps;
    const children = this.memo.children(share, installed, () =>
      desiredShareChildren(share, valid, {
        image,
        domain,
        ...(ingress ? { ingress } : {}),
        ...(installed ? { installation: installed } : {}),
        ...(pods ? { pods } : {}),
      }),
    );
    return { valid, children };
  }

  /**
   * Writes each child (the config Secret first: the pod mounts it) and deletes those no longer
   * wanted; names the children it created, and says why the HTTPRoute cannot be written if so.
   */
  private async apply(
    namespace: string,
    name: string,
    children: ShareChildren,
  ): Promise<{ created: string[]; routeMissing: string | undefined }> {
    const { client } = this.deps;
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
    await apply(SECRETS, children.secret, frontendSecretName(name));
    const [, , , routeMissing] = await Promise.all([
      apply(DEPLOYMENTS, children.deployment, childName(name)),
      apply(SERVICES, children.service, childName(name)),
      apply(INGRESSES, children.ingress, childName(name)),
      this.deps.ingress?.route ? this.applyRoute(() => apply(HTTP_ROUTES, children.route, childName(name))) : undefined,
    ]);
    return { created, routeMissing };
  }

  /**
   * Ready once the Deployment is available (and the Ingress has an address or the HTTPRoute is
   * accepted, when awaited); otherwise Ready=False with why. An Event when the share became ready,
   * or when children were created.
   */
  private async reportStatus(
    share: Share,
    { valid, children }: Desired,
    created: readonly string[],
    installed: Installation | undefined,
  ): Promise<ReconcileResult> {
    const { client, domain, ingress } = this.deps;
    const { namespace = '', name } = share.metadata;
    const route = ingress?.route;
    const endpoints =
      valid.shareMode === 'public'
        ? [
            frontendEndpoint(
              valid.token,
              domain,
              installed?.oauth.endpointUrl,
              route ? route.tls === 'gateway' : shareTlsConfigured(ingress?.tls),
            ),
          ]
        : [];
    // Just created, the Deployment may not be in the cache yet: it exists, with no replica available.
    const justCreated = created.includes(`${DEPLOYMENTS.kind} ${childName(name)}`) ? children.deployment : undefined;
    const deployment = this.live(DEPLOYMENTS, namespace, childName(name)) ?? justCreated;
    const awaitIngress = children.ingress && ingress?.awaitAddress;
    const notServing = await readinessOf(client, this.deps.logger, {
      namespace,
      deployment: { name: childName(name), live: deployment },
      podSelector: { [SHARE_LABEL]: name },
      ...(awaitIngress
        ? { ingress: { name: childName(name), live: this.live(INGRESSES, namespace, childName(name)) } }
        : {}),
      ...(route && children.route
        ? {
            route: {
              name: childName(name),
              live: this.live(HTTP_ROUTES, namespace, childName(name)),
              parentRefs: route.parentRefs,
            },
          }
        : {}),
    });
    const { outcome, becameReady } = await this.report.serving(
      share,
      { token: valid.token, frontendEndpoints: endpoints },
      notServing,
      `Deployment ${childName(name)} available${awaitIngress ? '; Ingress admitted' : ''}${children.route ? '; HTTPRoute accepted' : ''}`,
      [
        deploymentAvailable(deployment, 'Deployment'),
        ...(children.ingress ? [tlsCondition(ingress?.tls, childName(name))] : []),
        ...(route && children.route ? [routeTlsCondition(route)] : []),
      ],
    );
    if (becameReady) {
      const url = endpoints[0] ? ` at ${endpoints[0]}` : '';
      this.deps.events.record(share, 'Normal', 'Ready', `share ${valid.token} is ready${url}${createdSuffix(created)}`);
    } else if (created.length > 0) {
      this.deps.events.record(share, 'Normal', 'Created', `created ${created.join(', ')}`);
    }
    return outcome;
  }

  /**
   * Applies the share's HTTPRoute; returns why it cannot be written when the cluster does not serve
   * the HTTPRoute API (no Gateway API CRDs), so the Share says so instead of failing each retry.
   */
  private async applyRoute(write: () => Promise<void>): Promise<string | undefined> {
    try {
      await write();
      return undefined;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return 'this cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes (operator.shareHttpRoute is enabled): install the Gateway API CRDs; the operator retries';
    }
  }

  /** Ready=False; the token stays in status unless the spec is invalid (it may be the wrong one). */
  private notReady(
    share: Share,
    reason: ConditionReason,
    message: string,
    result: 'invalid' | 'waiting',
    requeueAfterMs?: number,
  ): Promise<ReconcileResult> {
    const token = reason === 'InvalidSpec' ? undefined : share.status?.token;
    const fields = { ...(token ? { token } : {}), frontendEndpoints: [] };
    return this.report.notReady(share, fields, reason, message, result, requeueAfterMs);
  }

  /** On deletion: the other Shares with the deleted one's token. */
  private sharingToken(change: Change<Share>): string[] {
    if (change.type !== 'deleted') return [];
    const token = change.object.status?.token ?? change.object.spec?.token;
    if (!token) return [];
    return this.tokens.sharing(token).map(objectKey);
  }

  /** Another Share created earlier that holds the same token (tokens are host names: unique). */
  private tokenHolder(share: Share, token: string): string | undefined {
    const mine = `${share.metadata.creationTimestamp ?? ''}/${share.metadata.namespace}/${share.metadata.name}`;
    for (const other of this.tokens.sharing(token)) {
      if (other.metadata.uid === share.metadata.uid) continue;
      // The index holds each Share's own token; the spec's wins over the status's, as here.
      if ((other.spec?.token ?? other.status?.token) !== token) continue;
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
      HTTPRoute: this.deps.caches.httpRoutes,
    }[resource.kind];
    return cache?.get(namespace, name);
  }
}
