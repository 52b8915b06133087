import type { KubeObject } from './resources.ts';

/** The fields of a `coordination.k8s.io/v1` Lease's spec that svc reads and writes. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/** metav1.MicroTime: RFC 3339 with exactly six fractional digits (the API server insists). */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
