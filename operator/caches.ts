import type { Informer } from './informer.ts';
import type { InstallationResult } from './installation.ts';
import type { Access, KubeObject, Share } from '../lib/kube/resources.ts';

/** The informer caches the reconcilers read (level-based: they never act on watch event types). */
export interface Caches {
  readonly shares: Informer<Share>;
  readonly accesses: Informer<Access>;
  readonly deployments: Informer;
  readonly services: Informer;
  readonly ingresses: Informer;
  readonly secrets: Informer;
}

/** What every reconciler needs besides the caches. */
export interface InstallationView {
  /** The parsed installation frontend Secret; undefined until it was read. */
  current(): InstallationResult | undefined;
}

export function ownedBy(obj: KubeObject, kind: string): string | undefined {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller && r.kind === kind);
  return ref ? `${obj.metadata.namespace ?? ''}/${ref.name}` : undefined;
}
