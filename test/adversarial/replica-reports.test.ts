import { afterAll, describe, expect, it } from 'vitest';
import { MAX_REPLICAS, ReplicaReports } from '../../controller/replica-reports.ts';
import { SvcError } from '../../lib/errors.ts';
import { trafficTotals } from '../../lib/share/traffic.ts';
import type { PublishedShare } from '../../lib/tunnel/directory.ts';
import type { ReplicaReport, ReportedTraffic } from '../../lib/tunnel/frontend-api.ts';
import { suiteFigures } from '../support/figures.ts';

/**
 * A frontend replica whose credential is stolen (it is shared by every replica, so it cannot name
 * the replica) attacks the controller's report endpoint: it claims environments whose tunnels it
 * does not hold, invents replica names to multiply its state, and sends traffic for shares that are
 * not registered or minutes far from now. The controller's state stays bounded by the registry and
 * MAX_REPLICAS, and the figures of honest replicas stay as they were.
 */
const figures = suiteFigures('replica-reports');
afterAll(() => figures.write());

const MINUTE = Math.floor(Date.now() / 60_000) * 60_000;
const registered = new Map<string, PublishedShare>(
  ['alpha', 'beta'].map((t, i) => [t, { token: t, envZId: `env-${i}` } as PublishedShare]),
);

function controller() {
  const reports = new ReplicaReports({ shares: (t) => registered.get(t) });
  // The honest replica holds env-0 (its ticket came from authenticating the agent's token).
  const honest = (seq: number, traffic: ReportedTraffic[] = []): ReplicaReport => ({
    replica: 'frontend-0',
    run: 'honest',
    seq,
    environments: [{ envZId: 'env-0', ticket: reports.ticket('env-0'), tunnels: 1 }],
    traffic,
  });
  reports.apply(honest(0, [{ token: 'alpha', minute: MINUTE, requests: 3, bytesIn: 0, bytesOut: 30, errors: 0 }]));
  return { reports, honest };
}

const refusedWith = (f: () => unknown): string => {
  try {
    f();
    return 'applied';
  } catch (err) {
    return err instanceof SvcError ? err.code : String(err);
  }
};

describe('a stolen frontend credential on the report endpoint', () => {
  it('cannot claim an environment without the ticket its token earns', async () => {
    const { reports } = controller();
    const tally = figures.attackClass(
      'Replica report claims a tunnel it does not hold (forged, other environment’s, truncated tickets)',
    );
    const tickets = ['forged', 'x'.repeat(43), reports.ticket('env-0'), reports.ticket('env-1').slice(0, 42)];
    for (const envZId of ['env-1', 'env-unknown']) {
      for (const ticket of tickets) {
        await tally.run(() => {
          const report = {
            replica: 'intruder',
            run: 'r',
            seq: 0,
            environments: [{ envZId, ticket, tunnels: 1 }],
            traffic: [],
          };
          expect(refusedWith(() => reports.apply(report))).toBe('tunnel_not_held');
          expect(reports.of(envZId)).toBeUndefined();
        });
      }
    }
    expect(reports.reporting().map((r) => r.name)).toEqual(['frontend-0']);
  });

  it('cannot grow the controller past the registry and MAX_REPLICAS, nor change honest figures', async () => {
    const { reports, honest } = controller();
    const tally = figures.attackClass(
      'Replica reports flood the controller (invented replica names, unregistered shares, far minutes, replays)',
    );
    const junk = (i: number): ReportedTraffic[] =>
      Array.from({ length: 5_000 }, (_, j) => ({
        token: j % 2 ? `nope-${i}-${j}` : 'alpha',
        minute: MINUTE + (j % 4 === 0 ? 120 : -120) * 60_000,
        requests: 1_000_000,
        bytesIn: 1,
        bytesOut: 1,
        errors: 0,
      }));
    let refused = 0;
    for (let i = 0; i < 500; i++) {
      await tally.run(() => {
        const outcome = refusedWith(() =>
          reports.apply({ replica: `fake-${i}`, run: 'r', seq: 0, environments: [], traffic: junk(i) }),
        );
        if (outcome === 'too_many_replicas') refused++;
        else expect(outcome).toBe('applied');
      });
    }
    // A replay of the honest batch (same run and seq) adds nothing.
    await tally.run(() => {
      reports.apply(honest(0, [{ token: 'alpha', minute: MINUTE, requests: 3, bytesIn: 0, bytesOut: 30, errors: 0 }]));
      expect(trafficTotals(reports.traffic.lastHour('alpha'))).toMatchObject({ requests: 3, bytesOut: 30 });
    });
    expect(reports.reporting().length).toBeLessThanOrEqual(MAX_REPLICAS);
    expect(reports.traffic.size).toBeLessThanOrEqual(registered.size);
    figures.measure('invented replica names tried / refused (429 too_many_replicas)', `500 / ${refused}`);
    figures.measure('replicas the controller tracks after the flood (bound 64 reporting)', reports.reporting().length);
    figures.measure(
      'shares with traffic counters after 500 reports of 5,000 junk entries each (registry: 2)',
      reports.traffic.size,
    );
    expect(refused).toBe(500 - (MAX_REPLICAS - 1));
  });
});
