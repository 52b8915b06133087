import type { Http2Stream } from 'node:http2';

/**
 * Counts the streams open at once per key (a TCP share's token) and refuses one over `max`, so the
 * connections to one share cannot take a frontend's capacity from every other share and account.
 */
export class ConnectionCounter {
  private readonly open = new Map<string, number>();
  private readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  /** Counts `stream` under `key` until it closes; false (not counted) when `key` is at the maximum. */
  admit(key: string, stream: Http2Stream): boolean {
    const count = this.open.get(key) ?? 0;
    if (count >= this.max) return false;
    this.open.set(key, count + 1);
    stream.once('close', () => {
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    });
    return true;
  }

  /** Streams open under `key` now. */
  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
