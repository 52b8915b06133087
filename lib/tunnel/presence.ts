import { systemClock, type Clock } from '../clock.ts';

/** The agent's version, sent with the tunnel upgrade (informational: shown in the console, never trusted). */
export const AGENT_VERSION_HEADER = 'svc-agent-version';
const VERSION_TEXT = /^[0-9A-Za-z.+-]{1,32}$/;

/** What the frontend knows of one environment's tunnels. */
export interface Presence {
  readonly online: boolean;
  /** Epoch ms: now while online, else when its last tunnel closed. */
  readonly lastSeen: number;
  /** What the agent said it runs (absent when it sent nothing usable). */
  readonly agentVersion?: string;
}

/** Where the console reads an environment's presence: one frontend's, or the replicas' reports merged. */
export interface PresenceSource {
  /** Undefined when the environment was not seen. */
  of(envZId: string): Presence | undefined;
}

/** An environment with tunnels open here. */
export interface HeldEnvironment {
  readonly envZId: string;
  readonly tunnels: number;
  readonly agentVersion?: string;
}

/**
 * The environments whose agents hold a tunnel to this frontend, and when the others were last seen,
 * for the installation's console. One small entry per environment that ever connected since start.
 */
export class EnvironmentPresence implements PresenceSource {
  private readonly entries = new Map<string, { tunnels: number; lastSeen: number; agentVersion?: string }>();
  private readonly clock: Clock;

  constructor(clock: Clock = systemClock) {
    this.clock = clock;
  }

  /** A tunnel of `envZId` attached; `version` is the agent's header, kept only when it looks like a version. */
  connected(envZId: string, version: string | string[] | undefined): void {
    const entry = this.entries.get(envZId) ?? { tunnels: 0, lastSeen: 0 };
    entry.tunnels++;
    entry.lastSeen = this.clock.now();
    if (typeof version === 'string' && VERSION_TEXT.test(version)) entry.agentVersion = version;
    this.entries.set(envZId, entry);
  }

  /** A tunnel of `envZId` detached. */
  disconnected(envZId: string): void {
    const entry = this.entries.get(envZId);
    if (!entry) return;
    entry.tunnels = Math.max(0, entry.tunnels - 1);
    entry.lastSeen = this.clock.now();
  }

  /** Undefined when the environment never connected since this process started. */
  of(envZId: string): Presence | undefined {
    const entry = this.entries.get(envZId);
    if (!entry) return undefined;
    const online = entry.tunnels > 0;
    return {
      online,
      lastSeen: online ? this.clock.now() : entry.lastSeen,
      ...(entry.agentVersion ? { agentVersion: entry.agentVersion } : {}),
    };
  }

  /** The environments with tunnels open here, the one whose tunnel attached or detached last first. */
  held(): HeldEnvironment[] {
    const out: HeldEnvironment[] = [];
    for (const [envZId, e] of this.entries) {
      if (e.tunnels > 0)
        out.push({ envZId, tunnels: e.tunnels, ...(e.agentVersion ? { agentVersion: e.agentVersion } : {}) });
    }
    return out.sort(
      (a, b) => (this.entries.get(b.envZId)?.lastSeen ?? 0) - (this.entries.get(a.envZId)?.lastSeen ?? 0),
    );
  }

  /** Forgets an environment (disabled). */
  forget(envZId: string): void {
    this.entries.delete(envZId);
  }
}
