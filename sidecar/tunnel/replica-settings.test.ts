import { describe, expect, it } from 'vitest';
import { ConfigReader } from '../../lib/config-reader.ts';
import { readReplicaSettings } from './replica-settings.ts';

const ENV = { SVC_POD_NAMESPACE: 'svc', SVC_POD_NAME: 'public-frontend-7d9f-abcde', SVC_POD_IP: '10.1.2.3' };

function read(value: unknown, env: NodeJS.ProcessEnv = {}) {
  const r = new ConfigReader();
  const settings = readReplicaSettings(r, value, env);
  return { settings, problems: r.problems.map((p) => `${p.path}: ${p.message}`) };
}

describe('readReplicaSettings', () => {
  it('takes namespace, pod name and pod IP from the downward-API variables, with the defaults', () => {
    expect(read(undefined, ENV)).toEqual({
      settings: {
        namespace: 'svc',
        podName: 'public-frontend-7d9f-abcde',
        podIp: '10.1.2.3',
        peerListen: { host: '0.0.0.0', port: 8090 },
        leaseDurationMs: 15_000,
      },
      problems: [],
    });
  });

  it('prefers the file over the variables', () => {
    const { settings } = read(
      { namespace: 'other', pod_name: 'a', pod_ip: 'fd00::1', peer_listen: '[::]:9000', lease_duration: '30s' },
      ENV,
    );
    expect(settings).toEqual({
      namespace: 'other',
      podName: 'a',
      podIp: 'fd00::1',
      peerListen: { host: '::', port: 9000 },
      leaseDurationMs: 30_000,
    });
  });

  it('reports every problem with its field path in one pass', () => {
    const { settings, problems } = read(
      { pod_name: 'Not_A_Pod', pod_ip: 'ten.one', peer_listen: 'nowhere', lease_duration: '1500ms', surprise: 1 },
      {},
    );
    expect(settings).toBeUndefined();
    expect(problems).toEqual([
      'replicas.surprise: unknown field (known: namespace, pod_name, pod_ip, peer_listen, lease_duration)',
      'replicas.namespace: required (or set $SVC_POD_NAMESPACE)',
      'replicas.pod_name: must be a pod name (a DNS subdomain), got "Not_A_Pod"',
      'replicas.pod_ip: must be an IPv4 or IPv6 address, got "ten.one"',
      'replicas.peer_listen: must be ip:port (for example 0.0.0.0:8080), got "nowhere"',
      'replicas.lease_duration: must be whole seconds between 1s and 1h, got "1500ms"',
    ]);
  });

  it('names the variable a bad value came from, and refuses a section that is not a mapping', () => {
    expect(read(undefined, { ...ENV, SVC_POD_IP: 'x' }).problems).toEqual([
      'replicas.pod_ip (from $SVC_POD_IP): must be an IPv4 or IPv6 address, got "x"',
    ]);
    expect(read('yes', ENV).problems).toEqual(['replicas: must be a mapping, got string "yes"']);
    expect(read({ lease_duration: 'soon' }, ENV).problems).toEqual([
      'replicas.lease_duration: must be a duration such as 5m, 6h or 24h, got "soon"',
    ]);
  });
});
