import { describe, expect, it } from 'vitest';
import { microTime } from '../lib/kube/lease.ts';
import { LeaseObserver, nextLease } from './leader.ts';

const now = new Date('2025-01-02T03:04:05.678Z');

describe('microTime', () => {
  it('writes six fractional digits, as metav1.MicroTime requires', () => {
    expect(microTime(now)).toBe('2025-01-02T03:04:05.678000Z');
  });
});

describe('nextLease', () => {
  it('creates a fresh lease when none exists', () => {
    expect(nextLease(undefined, 'me', now, 15, true)).toEqual({
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: microTime(now),
      renewTime: microTime(now),
      leaseTransitions: 0,
    });
  });

  it('renews its own lease, keeping acquireTime and transitions', () => {
    const mine = {
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: 'then',
      renewTime: 'then',
      leaseTransitions: 3,
    };
    expect(nextLease(mine, 'me', now, 15, false)).toEqual({ ...mine, renewTime: microTime(now) });
  });

  it('refuses a lease another holder still holds', () => {
    expect(
      nextLease({ holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: 'x' }, 'me', now, 15, false),
    ).toBeUndefined();
  });

  it('takes over an expired or released lease and counts the transition', () => {
    const taken = nextLease({ holderIdentity: 'other', leaseTransitions: 2 }, 'me', now, 15, true);
    expect(taken?.holderIdentity).toBe('me');
    expect(taken?.leaseTransitions).toBe(3);
    expect(nextLease({ holderIdentity: '', leaseTransitions: 3 }, 'me', now, 15, false)?.leaseTransitions).toBe(3);
  });
});

describe('LeaseObserver', () => {
  it('judges expiry by when this replica saw the record change, not by the written timestamps', () => {
    const o = new LeaseObserver();
    const spec = { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: '1999-01-01T00:00:00.000000Z' };
    o.observe(spec, 1_000_000);
    expect(o.expired(spec, 1_000_000 + 14_000)).toBe(false);
    o.observe(spec, 1_000_000 + 14_000);
    expect(o.expired(spec, 1_000_000 + 16_000)).toBe(true);
    const renewed = { ...spec, renewTime: '1999-01-01T00:00:10.000000Z' };
    o.observe(renewed, 1_000_000 + 16_000);
    expect(o.expired(renewed, 1_000_000 + 30_000)).toBe(false);
  });

  it('treats an empty holder as free', () => {
    expect(new LeaseObserver().expired({ holderIdentity: '' }, 0)).toBe(true);
  });
});
