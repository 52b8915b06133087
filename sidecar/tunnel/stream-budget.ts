import type { OutgoingHttpHeaders } from 'node:http';
import type { ClientHttp2Stream } from 'node:http2';
import { TCP_PROTOCOL, shareTokenOf, type TunnelLimits } from '../../lib/tunnel/protocol.ts';
import { TunnelUnavailable, type StreamTarget } from '../../lib/tunnel/stream-target.ts';

export type StreamBudgetLimits = Pick<
  TunnelLimits,
  'maxStreamsPerShare' | 'maxStreamsPerAccount' | 'maxTcpConnectionsPerShare'
>;

/**
 * The streams open at once into the tunnels this process holds, counted per share and per account,
 * whichever path opened them (a public visitor on either of the frontend's paths, a private access,
 * a stream another replica forwarded here). A share over its cap, or an account over its own, gets
 * `TunnelUnavailable('busy')`, which every path answers 503 ("Share busy"): the visitors of one share
 * cannot take its environment's tunnels from the other shares, and no account can make the process
 * hold more than `maxStreamsPerAccount` stream windows for it.
 */
export class StreamBudget {
  private readonly limits: StreamBudgetLimits;
  private readonly perShare = new Map<string, number>();
  private readonly perAccount = new Map<string, number>();

  constructor(limits: StreamBudgetLimits) {
    this.limits = limits;
  }

  /**
   * Opens a stream on `target` (a tunnel of an environment of `accountId`) for the share its
   * `:authority` names, counted until it closes; throws `TunnelUnavailable('busy')` over a cap.
   */
  open(accountId: string, target: StreamTarget, headers: OutgoingHttpHeaders, endStream?: boolean): ClientHttp2Stream {
    const share = shareTokenOf(String(headers[':authority'] ?? '')) ?? '';
    const shareKey = `${accountId}/${share}`;
    const tcp = headers[':protocol'] === TCP_PROTOCOL;
    const shareCap = tcp ? this.limits.maxTcpConnectionsPerShare : this.limits.maxStreamsPerShare;
    const ofShare = this.perShare.get(shareKey) ?? 0;
    if (ofShare >= shareCap) {
      throw new TunnelUnavailable('busy', `share ${share} already has ${ofShare} streams open (cap ${shareCap})`);
    }
    const ofAccount = this.perAccount.get(accountId) ?? 0;
    if (ofAccount >= this.limits.maxStreamsPerAccount) {
      throw new TunnelUnavailable(
        'busy',
        `the account's tunnels already carry ${ofAccount} streams (cap ${this.limits.maxStreamsPerAccount})`,
      );
    }
    const stream = target.open(headers, endStream);
    add(this.perShare, shareKey, 1);
    add(this.perAccount, accountId, 1);
    stream.once('close', () => {
      add(this.perShare, shareKey, -1);
      add(this.perAccount, accountId, -1);
    });
    return stream;
  }

  /** Streams open now for `accountId`'s shares. */
  ofAccount(accountId: string): number {
    return this.perAccount.get(accountId) ?? 0;
  }
}

function add(counts: Map<string, number>, key: string, delta: number): void {
  const next = (counts.get(key) ?? 0) + delta;
  if (next > 0) counts.set(key, next);
  else counts.delete(key);
}
