import { connect, type Socket } from 'node:net';

/**
 * A connection to a share backend as the fast path uses it: one request at a time, its bytes
 * handed to whoever holds it (`user`), back in its pool between requests.
 */
export interface Upstream {
  readonly socket: Socket;
  readonly key: string;
  /** Whether it carried a request before (a kept-alive connection the backend may have closed meanwhile). */
  reused: boolean;
  user: UpstreamUser | undefined;
}

export interface UpstreamUser {
  upstreamData(chunk: Buffer): void;
  /** The connection ended or failed; `err` when it failed. */
  upstreamClosed(err: Error | undefined): void;
}

/** Idle connections kept per backend, and connections open at once, as Node's agent has them for the slow path. */
const MAX_IDLE_PER_BACKEND = 64;
const MAX_OPEN_PER_BACKEND = 256;

/**
 * Kept-alive plain-TCP connections to the share backends (the fast paths of the frontend and of the
 * agent's tunnel serve `http://` targets only). The most recently used connection is handed out first, so that under light load one warm
 * connection carries the requests. A connection that speaks or closes while idle is dropped.
 */
export class UpstreamPool {
  private readonly idle = new Map<string, Upstream[]>();
  private readonly open = new Map<string, number>();
  private closed = false;

  /**
   * An idle connection to `host:port`, or a new one (always a new one when `fresh`); undefined
   * when that backend already has as many open as the pool allows (a `fresh` one excepted). `key`
   * names the backend in the pool; callers that take often pass it built once.
   */
  take(host: string, port: number, fresh: boolean, key = `${host}:${port}`): Upstream | undefined {
    const upstream = fresh ? undefined : this.idle.get(key)?.pop();
    if (upstream) {
      upstream.reused = true;
      upstream.socket.ref();
      return upstream;
    }
    const open = this.open.get(key) ?? 0;
    if (!fresh && open >= MAX_OPEN_PER_BACKEND) return undefined;
    this.open.set(key, open + 1);
    return this.connect(host, port, key);
  }

  /** A connection whose response ended cleanly and that the backend keeps open. */
  give(upstream: Upstream): void {
    upstream.user = undefined;
    const idle = this.idle.get(upstream.key) ?? [];
    if (this.closed || idle.length >= MAX_IDLE_PER_BACKEND || upstream.socket.destroyed) {
      upstream.socket.destroy();
      return;
    }
    // Paused when its last visitor read slowly: an idle connection must flow to notice its close.
    upstream.socket.resume();
    // An idle connection does not keep the process alive, as with Node's agent.
    upstream.socket.unref();
    idle.push(upstream);
    this.idle.set(upstream.key, idle);
  }

  close(): void {
    this.closed = true;
    for (const idle of this.idle.values()) for (const upstream of idle) upstream.socket.destroy();
    this.idle.clear();
  }

  private connect(host: string, port: number, key: string): Upstream {
    const socket = connect({ host, port, noDelay: true });
    const upstream: Upstream = { socket, key, reused: false, user: undefined };
    socket.on('data', (chunk: Buffer) => {
      if (upstream.user) upstream.user.upstreamData(chunk);
      else socket.destroy();
    });
    let failure: Error | undefined;
    socket.on('error', (err) => {
      failure = err;
    });
    socket.on('close', () => {
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
      const user = upstream.user;
      upstream.user = undefined;
      if (user) user.upstreamClosed(failure);
      else this.forget(upstream);
    });
    return upstream;
  }

  private forget(upstream: Upstream): void {
    const idle = this.idle.get(upstream.key);
    const at = idle?.indexOf(upstream) ?? -1;
    if (idle && at >= 0) idle.splice(at, 1);
  }
}
