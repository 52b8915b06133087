import type { Cluster, Worker } from 'node:cluster';
import { systemClock, type Clock } from '../lib/clock.ts';
import { ExpiringIds } from '../lib/expiring-ids.ts';

/**
 * The only state the frontend keeps in memory (sessions and logins live in sealed cookies): login
 * states already used (the replay guard) and sessions logged out here. With `workers` > 1 every
 * worker must see the same sets, so the primary process holds them (sharedStateOverIpc): a claim is
 * a round trip to the primary, decided there once; a logout is sent to the primary, which passes it
 * to every other worker. Both sets forget an entry at its expiry.
 */
export interface SharedState {
  /** True the first time a login state `id` is presented (it stays used until `until`), false for a replay. */
  claimLogin(id: string, until: number): boolean | Promise<boolean>;
  /** Refuses session `id` from now until `until` (its natural expiry) in every process. */
  logOut(id: string, until: number): void;
  /** Until when session `id` is logged out, or undefined. Synchronous: it runs on every request. */
  loggedOutUntil(id: string): number | undefined;
  /** Whether any session is logged out (the common case, none, skips the per-session look-ups). */
  readonly anyLoggedOut: boolean;
}

/** Both sets in this process: the single-process frontend, and the primary's copy for its workers. */
export function localSharedState(clock: Clock = systemClock): SharedState {
  const used = new ExpiringIds(clock);
  const loggedOut = new ExpiringIds(clock);
  return {
    claimLogin: (id, until) => used.add(id, until),
    logOut: (id, until) => void loggedOut.add(id, until),
    loggedOutUntil: (id) => loggedOut.get(id),
    get anyLoggedOut() {
      return loggedOut.size > 0;
    },
  };
}

type Message =
  | { readonly svc: 'hello' }
  | { readonly svc: 'claim'; readonly seq: number; readonly id: string; readonly until: number }
  | { readonly svc: 'claimed'; readonly seq: number; readonly first: boolean }
  | { readonly svc: 'logout'; readonly id: string; readonly until: number };

function isMessage(value: unknown): value is Message {
  return typeof value === 'object' && value !== null && typeof (value as { svc?: unknown }).svc === 'string';
}

/**
 * The primary's side: answers claims from its own set, passes each logout on to the other workers,
 * and tells a worker that starts (a replacement) of every logout still in force when it says hello
 * (messages sent before the worker's own code listens would be lost).
 */
export function serveSharedState(cluster: Cluster, clock: Clock = systemClock): void {
  const used = new ExpiringIds(clock);
  const loggedOut = new ExpiringIds(clock);
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.svc === 'hello') {
      for (const [id, until] of loggedOut.entries()) worker.send({ svc: 'logout', id, until } satisfies Message);
    } else if (message.svc === 'claim') {
      const first = used.add(message.id, message.until);
      worker.send({ svc: 'claimed', seq: message.seq, first } satisfies Message);
    } else if (message.svc === 'logout') {
      loggedOut.add(message.id, message.until);
      for (const other of Object.values(cluster.workers ?? {}))
        if (other && other !== worker && other.isConnected()) other.send(message);
    }
  });
}

/**
 * A worker's side: logouts are kept locally (the hot path reads them without a round trip) and sent
 * to the primary for the other workers, which learn of them within one IPC hop; claims are decided
 * by the primary. A worker whose primary is gone refuses logins rather than risk a replay.
 */
export function sharedStateOverIpc(clock: Clock = systemClock): SharedState {
  const local = localSharedState(clock);
  const pending = new Map<number, (first: boolean) => void>();
  let seq = 0;
  process.on('message', (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.svc === 'claimed') {
      pending.get(message.seq)?.(message.first);
      pending.delete(message.seq);
    } else if (message.svc === 'logout') local.logOut(message.id, message.until);
  });
  if (process.connected) process.send?.({ svc: 'hello' } satisfies Message);
  process.on('disconnect', () => {
    for (const answer of pending.values()) answer(false);
    pending.clear();
  });
  return {
    claimLogin(id, until) {
      if (!process.connected || !process.send) return false;
      seq += 1;
      const mine = seq;
      return new Promise<boolean>((resolve) => {
        pending.set(mine, resolve);
        process.send?.({ svc: 'claim', seq: mine, id, until } satisfies Message);
      });
    },
    logOut(id, until) {
      local.logOut(id, until);
      if (process.connected) process.send?.({ svc: 'logout', id, until } satisfies Message);
    },
    loggedOutUntil: (id) => local.loggedOutUntil(id),
    get anyLoggedOut() {
      return local.anyLoggedOut;
    },
  };
}
