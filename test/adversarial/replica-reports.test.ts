import { afterAll, describe, expect, it } from 'vitest';
import { MAX_REPLICAS, MAX_REPORTED_MINUTE, ReplicaReports } from '../../controller/replica-reports.ts';
import { SvcError } from '../../lib/errors.ts';
import { trafficTotals } from '../../lib/share/traffic.ts';
import type { PublishedShare } from '../../lib/tunnel/directory.ts';
import type { ReplicaReport, ReportedTraffic } from '../../lib/tunnel/frontend-api.ts';
import { suiteFigures } from '../support/figures.ts';

/**
 * A frontend replica whose credential is stolen (it is shared by every replica, so it cannot name
 * the replica) attacks the controller's report endpoint: it claims environments whose tunnels it
 * does not hold, invents replica names to multiply its state, and sends traffic for shares that are
 * not registered, minutes far from now, or shares of environments it does not hold, and speaks as
 * another replica's name. The controller's state stays bounded by the registry and MAX_REPLICAS, and
 * the figures and presence of honest replicas stay as they were.
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
    figures.measure('invented replica names proving no environment tried / refused', `500 / ${refused}`);
    figures.measure(
      'replicas the controller tracks after the flood (bound 64 holding tunnels)',
      reports.reporting().length,
    );
    figures.measure(
      'shares with traffic counters after 500 reports of 5,000 junk entries each (registry: 2)',
      reports.traffic.size,
    );
    // Names proving no environment are not kept: an honest replica still gets in.
    expect(refused).toBe(0);
    expect(reports.reporting().map((r) => r.name)).toEqual(['frontend-0']);
    const newcomer = {
      replica: 'frontend-1',
      run: 'honest',
      seq: 0,
      environments: [{ envZId: 'env-1', ticket: reports.ticket('env-1'), tunnels: 1 }],
      traffic: [],
    };
    expect(refusedWith(() => reports.apply(newcomer))).toBe('applied');
  });

  it('cannot count another environment’s traffic in the current minute nor take frontend-0 offline', async () => {
    const { reports, honest } = controller();
    const tally = figures.attackClass(
      'Replica report forges current-minute traffic of a share it does not hold, or speaks as frontend-0',
    );
    const forged: ReportedTraffic = {
      token: 'alpha',
      minute: MINUTE,
      requests: 1e9,
      bytesIn: 1e15,
      bytesOut: 1e15,
      errors: 1e9,
    };
    // A run proving env-1 only (its own environment) and a run proving nothing, under any name.
    const own = [{ envZId: 'env-1', ticket: reports.ticket('env-1'), tunnels: 1 }];
    for (const [replica, environments] of [
      ['intruder', []],
      ['intruder', own],
      ['frontend-0', []],
      ['frontend-0', own],
    ] as const) {
      await tally.run(() => {
        const result = reports.apply({ replica, run: 'evil', seq: 1, environments, traffic: [forged] });
        expect(result.traffic).toBe(0);
        reports.apply({ replica, run: 'evil', seq: 2, environments: [], traffic: [], leaving: true });
        expect(reports.of('env-0')).toMatchObject({ online: true });
      });
    }
    const afterForged = trafficTotals(reports.traffic.lastHour('alpha')).requests;
    expect(afterForged).toBe(3);
    // The holder's own next report still counts once, cut to the per-replica minute bound.
    reports.apply(honest(1, [forged]));
    const requests = trafficTotals(reports.traffic.lastHour('alpha')).requests;
    expect(requests).toBe(3 + MAX_REPORTED_MINUTE.requests);
    figures.measure('requests of alpha in the current minute after 4 forged reports of 1e9 (honest: 3)', afterForged);
    figures.measure('one report of 1e9 requests from the holder counts (per-replica minute bound)', requests - 3);
  });
});
