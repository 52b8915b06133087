import { isIP } from 'node:net';
import type { ConfigReader } from '../../lib/config-reader.ts';
import type { ListenAddress } from '../../lib/listen.ts';

/** Where this frontend replica records its tunnels and where other replicas reach it (docs/design.md). */
export interface ReplicaSettings {
  /** Where the Leases live. */
  readonly namespace: string;
  /** This replica: the Leases' holderIdentity. */
  readonly podName: string;
  /** Advertised with the peer port, so other replicas dial this pod directly (no Service in between). */
  readonly podIp: string;
  /** Where other replicas forward streams to this one (cleartext HTTP/2; pod network only). */
  readonly peerListen: ListenAddress;
  /** A Lease not renewed for this long is a dead replica's; renewed every third of it. */
  readonly leaseDurationMs: number;
}

export const DEFAULT_PEER_LISTEN = '0.0.0.0:8090';
export const DEFAULT_LEASE_DURATION_MS = 15_000;

const KEYS = ['namespace', 'pod_name', 'pod_ip', 'peer_listen', 'lease_duration'];
/** The chart sets these through the downward API (`metadata.namespace`, `metadata.name`, `status.podIP`). */
const ENV = { namespace: 'SVC_POD_NAMESPACE', pod_name: 'SVC_POD_NAME', pod_ip: 'SVC_POD_IP' } as const;
const DNS_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?$/;
const MAX_LEASE_MS = 3_600_000;

/**
 * The `replicas:` section of the frontend that serves tunnelled shares:
 * `{ namespace, pod_name, pod_ip, peer_listen, lease_duration }`. The first three default to the
 * environment variables the chart fills from the downward API; every problem is recorded with its
 * field path (`replicas.pod_ip: …`), naming the variable when the value came from there.
 */
export function readReplicaSettings(
  r: ConfigReader,
  value: unknown,
  env: NodeJS.ProcessEnv = process.env,
  path = 'replicas',
): ReplicaSettings | undefined {
  const section = r.object(value ?? {}, path) ?? {};
  r.unknownKeys(section, path, KEYS);
  const text = (key: keyof typeof ENV, valid: (v: string) => boolean, must: string): string | undefined => {
    const raw = section[key] ?? env[ENV[key]];
    const from = section[key] !== undefined ? `${path}.${key}` : `${path}.${key} (from $${ENV[key]})`;
    if (raw === undefined || raw === '') {
      r.problem(`${path}.${key}`, `required (or set $${ENV[key]})`, 'required');
      return undefined;
    }
    if (typeof raw !== 'string' || !valid(raw)) {
      r.problem(from, `${must}, got ${JSON.stringify(raw)}`);
      return undefined;
    }
    return raw;
  };
  const namespace = text('namespace', (v) => DNS_LABEL.test(v), 'must be a namespace name (a DNS label)');
  const podName = text('pod_name', (v) => DNS_SUBDOMAIN.test(v), 'must be a pod name (a DNS subdomain)');
  const podIp = text('pod_ip', (v) => isIP(v) !== 0, 'must be an IPv4 or IPv6 address');
  const peerText = section.peer_listen ?? DEFAULT_PEER_LISTEN;
  let peerListen: ListenAddress | undefined;
  if (typeof peerText !== 'string')
    r.problem(`${path}.peer_listen`, `must be ip:port, got ${JSON.stringify(peerText)}`);
  else peerListen = r.listenAddress(peerText, `${path}.peer_listen`);
  const leaseDurationMs = readLeaseDuration(r, section, path);
  if (!namespace || !podName || !podIp || !peerListen || leaseDurationMs === undefined) return undefined;
  return { namespace, podName, podIp, peerListen, leaseDurationMs };
}

/** A Lease counts whole seconds (`leaseDurationSeconds`), so the duration must be whole seconds too. */
function readLeaseDuration(r: ConfigReader, section: Record<string, unknown>, path: string): number | undefined {
  if (section.lease_duration === undefined) return DEFAULT_LEASE_DURATION_MS;
  const ms = r.duration(section, 'lease_duration', path);
  if (ms === undefined) return undefined;
  if (ms % 1000 !== 0 || ms < 1000 || ms > MAX_LEASE_MS) {
    r.problem(
      `${path}.lease_duration`,
      `must be whole seconds between 1s and 1h, got ${JSON.stringify(section.lease_duration)}`,
    );
    return undefined;
  }
  return ms;
}
