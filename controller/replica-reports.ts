import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock } from '../lib/clock.ts';
import { ShareTraffic } from '../lib/share/traffic.ts';
import type { PublishedShare } from '../lib/tunnel/directory.ts';
import type { ReplicaReport } from '../lib/tunnel/frontend-api.ts';
import type { HeldEnvironment, Presence, PresenceSource } from '../lib/tunnel/presence.ts';
import { apiError } from './errors.ts';

/** A replica that has not reported for this long is taken as gone (six report intervals). */
export const REPLICA_STALE_MS = 30_000;
/**
 * Replica runs holding tunnels at once; a further one is refused (429) until one ages out. A report
 * proving no environment is never stored, so it takes no place here.
 */
export const MAX_REPLICAS = 64;
/**
 * The most one traffic entry (one share, one minute, one replica) counts; more is cut to this. A
 * replica serves far less: 10 million requests a minute is 166,000 a second, 60 GB is 8 Gbit/s.
 */
export const MAX_REPORTED_MINUTE = { requests: 10_000_000, bytes: 60_000_000_000 } as const;
/** Environments whose last-seen time is kept; past that the one seen longest ago is forgotten. */
export const MAX_SEEN_ENVIRONMENTS = 100_000;

interface ReplicaState {
  readonly name: string;
  seq: number;
  lastReport: number;
  live: boolean;
  held: Map<string, HeldEnvironment>;
}

/** One replica as the admin view lists it. */
export interface ReportingReplica {
  readonly name: string;
  readonly lastReport: number;
  readonly environments: readonly string[];
}

export interface ReplicaReportsOptions {
  /** The registry's share lookup: traffic is kept only for registered shares. */
  readonly shares: (token: string) => PublishedShare | undefined;
  readonly clock?: Clock;
  readonly staleMs?: number;
}

/** The key of a replica run: a replica started again (a new `run`) is another replica. */
const runKey = (report: ReplicaReport): string => `${report.replica}\0${report.run}`;

/** A count as reported, cut to [0, max]; what is not a finite number counts 0. */
const bounded = (value: number, max: number): number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(value, max) : 0;

/**
 * What the frontend replicas of `svc controller` report (`POST /api/v1/frontend/report`), merged for
 * the console: which replica holds which environment's tunnels (presence), and per-share traffic
 * summed over replicas into one ShareTraffic. Bounded whatever a replica sends: an environment is
 * accepted only with the ticket `/frontend/authenticate` gave for its token in this run (a replica
 * reports only tunnels whose credential it presented), traffic only for registered shares of
 * environments this replica run proves in the report or held until it, each entry cut to
 * MAX_REPORTED_MINUTE, at most MAX_REPLICAS runs holding tunnels, and the traffic rings' own bound.
 * A replica run (name and `run`) changes only its own holdings: a report naming another run's
 * replica with an empty set or `leaving` takes nothing offline. A run silent for `staleMs` ages out:
 * its environments go offline (when no other run holds them), last seen at its last report.
 */
export class ReplicaReports implements PresenceSource {
  readonly traffic: ShareTraffic;
  private readonly key = randomBytes(32);
  private readonly replicas = new Map<string, ReplicaState>();
  private readonly seen = new Map<string, { lastSeen: number; agentVersion?: string }>();
  private readonly options: ReplicaReportsOptions;
  private readonly clock: Clock;

  constructor(options: ReplicaReportsOptions) {
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.traffic = new ShareTraffic(this.clock);
  }

  /** The proof that the environment token of `envZId` was presented to this controller run. */
  ticket(envZId: string): string {
    return createHmac('sha256', this.key).update(`svc-replica-presence v1\0${envZId}`).digest('base64url');
  }

  /**
   * Applies one report; throws `tunnel_not_held` (an environment without its valid ticket) or
   * `too_many_replicas` before changing anything. Returns how many traffic entries were added and
   * how many were ignored (unregistered share, environment never proven, minute outside the hour).
   */
  apply(report: ReplicaReport): { traffic: number; ignored: number } {
    const now = this.clock.now();
    this.ageOut(now);
    for (const env of report.environments) {
      if (!this.validTicket(env.envZId, env.ticket)) {
        throw apiError(
          'tunnel_not_held',
          `environment ${env.envZId}: the ticket is not the one /frontend/authenticate gave for its token in this controller run; report only tunnels this replica authenticated`,
        );
      }
    }
    const state = this.stateOf(report, now);
    if (!state) return { traffic: 0, ignored: report.traffic.length };
    const proven = new Set([...(state.live ? state.held.keys() : []), ...report.environments.map((e) => e.envZId)]);
    this.release(state, now);
    state.lastReport = now;
    if (!report.leaving) {
      for (const env of report.environments) {
        state.held.set(env.envZId, env);
        this.remember(env.envZId, now, env.agentVersion);
      }
    }
    state.live = state.held.size > 0;
    if (report.seq <= state.seq) return { traffic: 0, ignored: 0 };
    state.seq = report.seq;
    return this.addTraffic(report, proven);
  }

  of(envZId: string): Presence | undefined {
    const now = this.clock.now();
    this.ageOut(now);
    const seen = this.seen.get(envZId);
    const online = [...this.replicas.values()].some((r) => r.live && r.held.has(envZId));
    if (!seen) return undefined;
    return {
      online,
      lastSeen: online ? now : seen.lastSeen,
      ...(seen.agentVersion ? { agentVersion: seen.agentVersion } : {}),
    };
  }

  /** The replicas reporting now and the environments whose tunnels each holds, by name. */
  reporting(): ReportingReplica[] {
    this.ageOut(this.clock.now());
    return [...this.replicas]
      .filter(([, r]) => r.live)
      .map(([, r]) => ({ name: r.name, lastReport: r.lastReport, environments: [...r.held.keys()].sort() }))
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  private validTicket(envZId: string, ticket: string): boolean {
    const expected = Buffer.from(this.ticket(envZId));
    const given = Buffer.from(ticket);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /**
   * The replica run's state; undefined for a new run proving no environment (nothing to keep). A run
   * that starts holding tunnels is refused while MAX_REPLICAS runs hold tunnels.
   */
  private stateOf(report: ReplicaReport, now: number): ReplicaState | undefined {
    const key = runKey(report);
    const known = this.replicas.get(key);
    const holds = report.environments.length > 0 && !report.leaving;
    if (!holds || known?.live) return known;
    const live = [...this.replicas.values()].filter((r) => r.live).length;
    if (live >= MAX_REPLICAS) {
      throw apiError(
        'too_many_replicas',
        `${MAX_REPLICAS} frontend replicas hold tunnels already; ${report.replica} is refused until one stops reporting`,
      );
    }
    if (known) return known;
    // Gone runs are remembered (their last seq keeps a resent report from counting twice) up to a bound.
    for (const [name, r] of this.replicas) {
      if (this.replicas.size < MAX_REPLICAS * 2) break;
      if (!r.live) this.replicas.delete(name);
    }
    const state: ReplicaState = { name: report.replica, seq: -1, lastReport: now, live: true, held: new Map() };
    this.replicas.set(key, state);
    return state;
  }

  /** The replica no longer holds what it held: those environments were last seen now. */
  private release(state: ReplicaState, now: number): void {
    for (const env of state.held.values()) this.remember(env.envZId, now, env.agentVersion);
    state.held.clear();
  }

  private remember(envZId: string, at: number, agentVersion: string | undefined): void {
    const previous = this.seen.get(envZId);
    this.seen.delete(envZId);
    if (this.seen.size >= MAX_SEEN_ENVIRONMENTS) this.seen.delete(this.seen.keys().next().value as string);
    const version = agentVersion ?? previous?.agentVersion;
    this.seen.set(envZId, { lastSeen: at, ...(version ? { agentVersion: version } : {}) });
  }

  private ageOut(now: number): void {
    const staleMs = this.options.staleMs ?? REPLICA_STALE_MS;
    for (const state of this.replicas.values()) {
      if (!state.live || now - state.lastReport < staleMs) continue;
      this.release(state, state.lastReport);
      state.live = false;
    }
  }

  /** Adds the traffic of shares whose environment is in `proven`, each entry cut to MAX_REPORTED_MINUTE. */
  private addTraffic(report: ReplicaReport, proven: ReadonlySet<string>): { traffic: number; ignored: number } {
    const { requests: maxRequests, bytes: maxBytes } = MAX_REPORTED_MINUTE;
    let added = 0;
    let ignored = 0;
    for (const entry of report.traffic) {
      const share = this.options.shares(entry.token);
      const requests = bounded(entry.requests, maxRequests);
      const counts = {
        requests,
        bytesIn: bounded(entry.bytesIn, maxBytes),
        bytesOut: bounded(entry.bytesOut, maxBytes),
        errors: Math.min(bounded(entry.errors, maxRequests), requests),
      };
      if (share && proven.has(share.envZId) && this.traffic.add(entry.token, entry.minute, counts)) added++;
      else ignored++;
    }
    return { traffic: added, ignored };
  }
}
