import type { Http2Session } from 'node:http2';
import type { TunnelLink } from './link.ts';

/** How one end of a tunnel decides that its peer is gone. */
export interface LivenessSettings {
  /** An HTTP/2 PING is sent this often. */
  readonly pingIntervalMs: number;
  /** The peer is declared dead when nothing at all arrived from it for this long. */
  readonly pingTimeoutMs: number;
}

/** What `Liveness` drives: a ping to send, and what to do when the peer is declared dead. */
export interface LivenessHooks {
  ping(): void;
  /** Looks for arrivals the watcher counts itself (calls `heard`); run before each ping and deadline. */
  sample?(): void;
  /** Called once, with how long the peer has been silent. */
  dead(silentMs: number): void;
}

/**
 * Dead-peer detection of one end of a tunnel: pings every `pingIntervalMs` and declares the peer
 * dead once `pingTimeoutMs` passed without anything received from it — a PING's ack, a frame of
 * any stream, a WebSocket control frame. Counting every byte, not only the acks, keeps a busy
 * tunnel alive when its ping waits behind megabytes of data on a saturated link; a silent cut (no
 * FIN, no RST: a laptop closed, a NAT entry dropped) stops every byte, so it is noticed within
 * `pingTimeoutMs` of the last byte that made it through.
 */
export class Liveness {
  private lastHeard: number;
  private readonly pinger: NodeJS.Timeout;
  private deadline: NodeJS.Timeout;
  private stopped = false;
  private readonly settings: LivenessSettings;
  private readonly hooks: LivenessHooks;
  private readonly now: () => number;

  /** Starts the timers; `now` is the clock (injectable for tests). */
  constructor(settings: LivenessSettings, hooks: LivenessHooks, now: () => number = Date.now) {
    this.settings = settings;
    this.hooks = hooks;
    this.now = now;
    this.lastHeard = now();
    this.pinger = setInterval(() => {
      hooks.sample?.();
      hooks.ping();
    }, settings.pingIntervalMs);
    this.pinger.unref();
    this.deadline = this.arm(settings.pingTimeoutMs);
  }

  /** Something arrived from the peer. */
  heard(): void {
    this.lastHeard = this.now();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.pinger);
    clearTimeout(this.deadline);
  }

  /**
   * One timer at the earliest moment the peer can be dead; `heard` only moves a number. The verdict
   * waits for the event loop's next I/O poll: when this process itself was stalled (CPU starved, a
   * long task), its timers run before the bytes that arrived meanwhile are read, and a live peer
   * would look silent.
   */
  private arm(delayMs: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (!this.stopped) setImmediate(() => this.judge());
    }, delayMs);
    timer.unref();
    return timer;
  }

  /** Re-arms the deadline from the last thing heard, or declares the peer dead. */
  private judge(): void {
    if (this.stopped) return;
    this.hooks.sample?.();
    const silent = this.now() - this.lastHeard;
    if (silent < this.settings.pingTimeoutMs) {
      this.deadline = this.arm(this.settings.pingTimeoutMs - silent);
      return;
    }
    this.stop();
    this.hooks.dead(silent);
  }
}

/** How often a watched link's received-byte count is read (a getter; no I/O). */
const SAMPLE_MS = 500;

/**
 * Watches a tunnel link (either transport, either role) with `Liveness`: HTTP/2 PINGs on `session`,
 * every byte the link received counted as heard (its count read every `SAMPLE_MS`, at each ping and
 * before the peer is declared dead), and the link terminated when the peer is declared dead — its close handlers then drop the
 * tunnel as for any other disconnect. Stops by itself when the link closes.
 */
export function watchTunnel(
  link: TunnelLink,
  session: Http2Session | undefined,
  settings: LivenessSettings,
  onDead: (silentMs: number) => void,
): void {
  let seen = link.received();
  const sample = (): void => {
    const now = link.received();
    if (now !== seen) liveness.heard();
    seen = now;
  };
  // A change is stamped when it is sampled, so the sampling period adds to the detection time.
  const sampler = setInterval(sample, Math.min(SAMPLE_MS, settings.pingIntervalMs));
  sampler.unref();
  const liveness: Liveness = new Liveness(settings, {
    sample,
    ping: () => {
      if (!session || session.destroyed || session.connecting) return;
      try {
        // An ack is heard the moment it arrives; a cancelled ping (session closing) needs nothing.
        session.ping((err) => {
          if (!err) liveness.heard();
        });
      } catch {
        // The session closed between the check and the ping.
      }
    },
    dead: (silentMs) => {
      clearInterval(sampler);
      onDead(silentMs);
      link.terminate();
    },
  });
  const stop = (): void => {
    clearInterval(sampler);
    liveness.stop();
  };
  link.onClose(stop);
  if (!link.open) stop();
}
