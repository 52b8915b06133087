import { createHash } from 'node:crypto';
import { microTime, type Lease } from '../../lib/kube/lease.ts';
import { LEASES, apiVersion } from '../../lib/kube/resources.ts';

/**
 * The Lease that says "replica <pod> holds a tunnel of environment <envZId>, reach it at <ip:port>":
 * one per (environment, replica), so two replicas holding tunnels of the same environment (an agent
 * reconnecting through another replica) never write the same object.
 */

/** Every tunnel Lease carries this label; its value is the environment, made label-safe. */
export const ENV_LABEL = 'svc.dev/tunnel-env';
/** The environment exactly as the tunnel authenticated it (a label value cannot hold every string). */
export const ENV_ANNOTATION = 'svc.dev/tunnel-env';
/** `<podIp>:<peer port>`: where the holder takes streams for the environment from other replicas. */
export const PEER_ANNOTATION = 'svc.dev/tunnel-peer';

const LABEL_VALUE = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/** The environment as a label value and name part: itself when it is one (envZIds are), else a hash. */
export function envLabel(envZId: string): string {
  return LABEL_VALUE.test(envZId) ? envZId : `h-${createHash('sha256').update(envZId).digest('hex').slice(0, 40)}`;
}

/** The Lease's name: readable (`svc-tunnel-<env>-<pod>`) when that is a valid object name, else hashed. */
export function leaseName(envZId: string, podName: string): string {
  const name = `svc-tunnel-${envLabel(envZId)}-${podName}`;
  if (name.length <= 253) return name;
  return `svc-tunnel-${createHash('sha256').update(`${envZId}\0${podName}`).digest('hex').slice(0, 40)}`;
}

export interface LeaseHolder {
  readonly namespace: string;
  readonly podName: string;
  /** `ip:port` as other replicas dial it. */
  readonly peer: string;
  readonly durationSeconds: number;
}

/** The whole Lease this replica writes for an environment it holds, renewed to `now`. */
export function tunnelLease(envZId: string, holder: LeaseHolder, now: Date): Lease {
  return {
    apiVersion: apiVersion(LEASES),
    kind: LEASES.kind,
    metadata: {
      name: leaseName(envZId, holder.podName),
      namespace: holder.namespace,
      labels: { [ENV_LABEL]: envLabel(envZId), 'app.kubernetes.io/managed-by': 'svc-frontend' },
      annotations: { [ENV_ANNOTATION]: envZId, [PEER_ANNOTATION]: holder.peer },
    },
    spec: {
      holderIdentity: holder.podName,
      leaseDurationSeconds: holder.durationSeconds,
      renewTime: microTime(now),
    },
  };
}

/** What another replica reads from a tunnel Lease. */
export interface TunnelLocation {
  readonly envZId: string;
  readonly holder: string;
  readonly peer: string;
  /** Epoch ms of the last renewal, and when the Lease runs out. */
  readonly renewedAt: number;
  readonly expiresAt: number;
}

/** A tunnel Lease as a location, or undefined when it lacks a field (not ours, or hand-edited). */
export function locationOf(lease: Lease): TunnelLocation | undefined {
  const envZId = lease.metadata.annotations?.[ENV_ANNOTATION];
  const peer = lease.metadata.annotations?.[PEER_ANNOTATION];
  const holder = lease.spec?.holderIdentity;
  const renewedAt = Date.parse(lease.spec?.renewTime ?? '');
  const seconds = lease.spec?.leaseDurationSeconds;
  if (!envZId || !peer || !holder || Number.isNaN(renewedAt) || !seconds || seconds <= 0) return undefined;
  return { envZId, holder, peer, renewedAt, expiresAt: renewedAt + seconds * 1000 };
}
