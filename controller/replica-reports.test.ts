import { describe, expect, it } from 'vitest';
import { SvcError } from '../lib/errors.ts';
import { trafficTotals } from '../lib/share/traffic.ts';
import type { PublishedShare } from '../lib/tunnel/directory.ts';
import type { ReplicaReport } from '../lib/tunnel/frontend-api.ts';
import { MAX_REPLICAS, MAX_REPORTED_MINUTE, ReplicaReports } from './replica-reports.ts';

const START = 1_800_000_000_000;
const MINUTE = Math.floor(START / 60_000) * 60_000;
const share = (token: string, envZId: string) => ({ token, envZId }) as PublishedShare;
const SHARES = new Map([
  ['alpha', share('alpha', 'env-a')],
  ['beta', share('beta', 'env-b')],
]);

function setup() {
  const clock = { at: START, now: () => clock.at };
  const reports = new ReplicaReports({ shares: (t) => SHARES.get(t), clock, staleMs: 30_000 });
  const report = (replica: string, fields: Partial<ReplicaReport> = {}): ReplicaReport => ({
    replica,
    run: 'r1',
    seq: 0,
    environments: [],
    traffic: [],
    ...fields,
  });
  const held = (envZId: string) => ({ envZId, ticket: reports.ticket(envZId), tunnels: 1, agentVersion: '1.2.3' });
  const counts = (token: string, requests: number, errors = 0) => ({
    token,
    minute: MINUTE,
    requests,
    bytesIn: 10 * requests,
    bytesOut: 100 * requests,
    errors,
  });
  return { clock, reports, report, held, counts };
}

const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof SvcError ? `${err.status} ${err.code}` : String(err);
  }
  return 'applied';
};

describe('ReplicaReports', () => {
  it('merges presence and traffic of two replicas; a resent report counts once', () => {
    const { reports, report, held, counts } = setup();
    reports.apply(report('a', { environments: [held('env-a')], traffic: [counts('alpha', 3)] }));
    const both = [held('env-a'), held('env-b')];
    reports.apply(report('b', { environments: both, traffic: [counts('alpha', 1, 1), counts('beta', 2)] }));
    // The same (run, seq) again (its answer was lost): presence refreshed, traffic not added twice.
    reports.apply(report('b', { environments: both, traffic: [counts('alpha', 1, 1), counts('beta', 2)] }));
    expect(trafficTotals(reports.traffic.lastHour('alpha'))).toEqual({
      requests: 4,
      bytesIn: 40,
      bytesOut: 400,
      errors: 1,
    });
    expect(trafficTotals(reports.traffic.lastHour('beta')).requests).toBe(2);
    expect(reports.of('env-a')).toEqual({ online: true, lastSeen: START, agentVersion: '1.2.3' });
    expect(reports.reporting().map((r) => [r.name, r.environments])).toEqual([
      ['a', ['env-a']],
      ['b', ['env-a', 'env-b']],
    ]);
  });

  it('refuses a whole report naming an environment without its ticket, changing nothing', () => {
    const { reports, report, held, counts } = setup();
    reports.apply(report('a', { environments: [held('env-a')] }));
    const forged = report('evil', {
      environments: [{ ...held('env-a'), envZId: 'env-b' }],
      traffic: [counts('alpha', 1000)],
    });
    expect(codeOf(() => reports.apply(forged))).toBe('403 tunnel_not_held');
    expect(reports.of('env-b')).toBeUndefined();
    expect(reports.reporting().map((r) => r.name)).toEqual(['a']);
    expect(trafficTotals(reports.traffic.lastHour('alpha')).requests).toBe(0);
  });

  it('ignores traffic of unregistered shares, unproven environments and minutes outside the hour', () => {
    const { reports, report, held, counts } = setup();
    const result = reports.apply(
      report('a', {
        environments: [held('env-a')],
        traffic: [
          counts('alpha', 1),
          counts('beta', 5), // env-b was never reported with its ticket
          counts('gone', 5),
          { ...counts('alpha', 7), minute: MINUTE - 61 * 60_000 },
          { ...counts('alpha', 7), minute: MINUTE + 60_000 },
        ],
      }),
    );
    expect(result).toEqual({ traffic: 1, ignored: 4 });
    expect(trafficTotals(reports.traffic.lastHour('alpha')).requests).toBe(1);
  });

  it('ages out a silent replica and forgets a leaving one; last seen is its last report', () => {
    const { clock, reports, report, held } = setup();
    reports.apply(report('a', { environments: [held('env-a')] }));
    reports.apply(report('b', { environments: [held('env-b')] }));
    clock.at += 20_000;
    reports.apply(report('b', { seq: 1, environments: [held('env-b')] }));
    clock.at += 15_000;
    expect(reports.of('env-a')).toEqual({ online: false, lastSeen: START, agentVersion: '1.2.3' });
    expect(reports.reporting().map((r) => r.name)).toEqual(['b']);
    reports.apply(report('b', { seq: 2, leaving: true }));
    expect(reports.of('env-b')).toMatchObject({ online: false, lastSeen: clock.at });
    expect(reports.reporting()).toEqual([]);
  });

  it('takes at most MAX_REPLICAS replicas holding tunnels; ones holding none take no place', () => {
    const { reports, report, held } = setup();
    for (let i = 0; i < 500; i++) expect(codeOf(() => reports.apply(report(`empty-${i}`)))).toBe('applied');
    for (let i = 0; i < MAX_REPLICAS; i++) reports.apply(report(`r${i}`, { environments: [held('env-a')] }));
    expect(codeOf(() => reports.apply(report('one-more', { environments: [held('env-b')] })))).toBe(
      '429 too_many_replicas',
    );
    expect(reports.reporting()).toHaveLength(MAX_REPLICAS);
  });

  it('lets a report change only its own replica run: another run of the name takes nothing offline', () => {
    const { reports, report, held, counts } = setup();
    reports.apply(report('frontend-0', { seq: 3, environments: [held('env-a')] }));
    reports.apply(report('frontend-0', { run: 'evil', seq: 0, leaving: true }));
    reports.apply(report('frontend-0', { run: 'evil', seq: 0 }));
    expect(reports.of('env-a')).toMatchObject({ online: true });
    // The honest run's seq tracking is its own: its next report counts, its resent one does not.
    reports.apply(report('frontend-0', { seq: 4, environments: [held('env-a')], traffic: [counts('alpha', 2)] }));
    reports.apply(report('frontend-0', { seq: 4, environments: [held('env-a')], traffic: [counts('alpha', 2)] }));
    expect(trafficTotals(reports.traffic.lastHour('alpha')).requests).toBe(2);
    // Two runs hold env-a: it stays online until the last one lets go.
    reports.apply(report('frontend-1', { environments: [held('env-a')] }));
    reports.apply(report('frontend-0', { seq: 5, leaving: true }));
    expect(reports.of('env-a')).toMatchObject({ online: true });
    reports.apply(report('frontend-1', { seq: 1 }));
    expect(reports.of('env-a')).toMatchObject({ online: false });
  });

  it('counts traffic only for environments this run proves or holds, each entry cut to the bound', () => {
    const { reports, report, held, counts } = setup();
    reports.apply(report('a', { environments: [held('env-a')] }));
    // Another replica run, proving nothing, sends env-a's share's traffic: not counted.
    const intruder = reports.apply(report('intruder', { traffic: [counts('alpha', 1e9)] }));
    expect(intruder).toEqual({ traffic: 0, ignored: 1 });
    expect(reports.apply(report('b', { environments: [held('env-b')], traffic: [counts('alpha', 5)] }))).toEqual({
      traffic: 0,
      ignored: 1,
    });
    // The holder's own count is cut to a plausible per-replica minute.
    reports.apply(report('a', { seq: 1, environments: [held('env-a')], traffic: [counts('alpha', 1e12, 1e12)] }));
    // A leaving run's last report still counts what it held until then.
    reports.apply(report('a', { seq: 2, leaving: true, traffic: [counts('alpha', 1)] }));
    expect(trafficTotals(reports.traffic.lastHour('alpha'))).toEqual({
      requests: MAX_REPORTED_MINUTE.requests + 1,
      bytesIn: MAX_REPORTED_MINUTE.bytes + 10,
      bytesOut: MAX_REPORTED_MINUTE.bytes + 100,
      errors: MAX_REPORTED_MINUTE.requests,
    });
  });
});
