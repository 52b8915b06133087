import type { Resource } from '../lib/kube/resources.ts';
import type { Reconciler, ReconcileResult } from './controller.ts';
import type { Watches } from './watches.ts';
import { StatusReporter, type StatusReporterDeps, type WithStatus } from './status.ts';

/**
 * What the reconcilers of the svc kinds (Share, Access, AgentEnrollment) share: the kind they
 * reconcile, their dependencies, and the kind's status reporter. Each subclass adds the watches
 * that wake it and its `reconcile`.
 */
export abstract class ObjectReconciler<
  D extends StatusReporterDeps,
  T extends WithStatus,
  F extends object,
> implements Reconciler {
  readonly kind: string;
  abstract readonly watches: Watches;
  protected readonly deps: D;
  protected readonly report: StatusReporter<T, F>;

  /** `noun` names the kind in logs (`share`, `access`, `enrollment`). */
  constructor(deps: D, resource: Resource, noun: string) {
    this.kind = resource.kind;
    this.deps = deps;
    this.report = new StatusReporter(deps, resource, noun);
  }

  abstract reconcile(key: string): Promise<ReconcileResult>;
}
