import type { StreamTarget } from '../../lib/tunnel/stream-target.ts';

/** A tunnel as the locator holds it: a stream target that can be closed with a reason. */
export interface HeldTunnel extends StreamTarget {
  readonly id: string;
  /** Streams open through it now. */
  readonly openStreams: number;
  close(code: number, reason: string): void;
}

/**
 * Where an environment's tunnel is. The frontend asks `find` on every tunnelled request and sends the
 * stream through whatever it returns.
 *
 * `LocalTunnels` (below) knows only the tunnels this process holds: enough for one frontend. With
 * several frontend replicas a visitor may land on a replica that does not hold the tunnel; a locator
 * for that case records each `attach` in a shared registry (in Kubernetes, a Lease per connected
 * environment naming the replica's pod address, renewed while connected, released on `detach`) and
 * answers `find` for an environment held elsewhere with a StreamTarget that opens the stream on the
 * holding replica (an HTTP/2 connection to its internal port, whose streams that replica forwards into
 * its local tunnel with `forwardStream`, exactly as it forwards a private access).
 */
export interface TunnelLocator {
  /** Records a connected tunnel; false when the environment already holds `maxPerEnvironment`. */
  attach(envZId: string, tunnel: HeldTunnel): boolean;
  detach(envZId: string, tunnel: HeldTunnel): void;
  /** Where to send the environment's next stream; undefined when it has no tunnel (the share is offline). */
  find(envZId: string): StreamTarget | undefined;
  /** Closes every tunnel of the environment (disabled, credential revoked). */
  closeEnvironment(envZId: string, code: number, reason: string): void;
  /** Environments with at least one tunnel here. */
  connected(): string[];
}

/**
 * The tunnels of this process, per environment, newest last. A new stream goes to the tunnel with
 * the fewest open, the newest of those on a tie: the streams of a busy environment spread over all
 * its tunnels (each has its own cap), and after a reconnect the old tunnel drains its in-flight
 * streams while new ones go to the new one.
 */
export class LocalTunnels implements TunnelLocator {
  private readonly byEnvironment = new Map<string, HeldTunnel[]>();
  private readonly maxPerEnvironment: number;

  constructor(maxPerEnvironment: number) {
    this.maxPerEnvironment = maxPerEnvironment;
  }

  attach(envZId: string, tunnel: HeldTunnel): boolean {
    const held = this.byEnvironment.get(envZId) ?? [];
    if (held.length >= this.maxPerEnvironment) return false;
    this.byEnvironment.set(envZId, [...held, tunnel]);
    return true;
  }

  detach(envZId: string, tunnel: HeldTunnel): void {
    const held = (this.byEnvironment.get(envZId) ?? []).filter((t) => t !== tunnel);
    if (held.length > 0) this.byEnvironment.set(envZId, held);
    else this.byEnvironment.delete(envZId);
  }

  find(envZId: string): StreamTarget | undefined {
    const held = this.byEnvironment.get(envZId) ?? [];
    let best = held.at(-1);
    for (let i = held.length - 2; i >= 0; i--) {
      const tunnel = held[i] as HeldTunnel;
      if (best && tunnel.openStreams < best.openStreams) best = tunnel;
    }
    return best;
  }

  closeEnvironment(envZId: string, code: number, reason: string): void {
    for (const tunnel of this.byEnvironment.get(envZId) ?? []) tunnel.close(code, reason);
    this.byEnvironment.delete(envZId);
  }

  connected(): string[] {
    return [...this.byEnvironment.keys()];
  }
}
