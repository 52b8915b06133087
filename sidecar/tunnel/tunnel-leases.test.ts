import { describe, expect, it } from 'vitest';
import { envLabel, leaseName, locationOf, tunnelLease } from './tunnel-leases.ts';

const holder = { namespace: 'svc', podName: 'frontend-6c9-x7k2p', peer: '10.0.0.7:8090', durationSeconds: 15 };

describe('tunnel Leases', () => {
  it('name the environment and the replica readably when they are valid names', () => {
    expect(envLabel('laptopaaaaaa')).toBe('laptopaaaaaa');
    expect(leaseName('laptopaaaaaa', 'frontend-6c9-x7k2p')).toBe('svc-tunnel-laptopaaaaaa-frontend-6c9-x7k2p');
  });

  it('hash an environment that cannot be a label value, and a name that would be too long', () => {
    const label = envLabel('Env With Spaces/and_more');
    expect(label).toMatch(/^h-[0-9a-f]{40}$/);
    expect(envLabel('Env With Spaces/and_more')).toBe(label);
    expect(envLabel('x'.repeat(64))).toMatch(/^h-/);
    expect(leaseName('laptopaaaaaa', 'p'.repeat(250))).toMatch(/^svc-tunnel-[0-9a-f]{40}$/);
  });

  it('round-trip: the Lease written is read back as the location other replicas route to', () => {
    const now = new Date('2026-01-02T03:04:05.678Z');
    const lease = tunnelLease('Env/1', holder, now);
    expect(lease.metadata.labels?.['svc.dev/tunnel-env']).toBe(envLabel('Env/1'));
    expect(lease.spec?.renewTime).toBe('2026-01-02T03:04:05.678000Z');
    expect(locationOf(lease)).toEqual({
      envZId: 'Env/1',
      holder: 'frontend-6c9-x7k2p',
      peer: '10.0.0.7:8090',
      renewedAt: now.getTime(),
      expiresAt: now.getTime() + 15_000,
    });
  });

  it('ignore a Lease missing a field (not written by a replica, or edited by hand)', () => {
    const lease = tunnelLease('laptopaaaaaa', holder, new Date());
    expect(locationOf({ ...lease, spec: { ...lease.spec, renewTime: 'yesterday' } })).toBeUndefined();
    expect(locationOf({ ...lease, metadata: { name: 'x', annotations: {} } })).toBeUndefined();
    expect(locationOf({ ...lease, spec: { ...lease.spec, leaseDurationSeconds: 0 } })).toBeUndefined();
  });
});
