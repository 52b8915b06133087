import type { KeyObject } from 'node:crypto';
import {
  FRESHNESS_MS,
  PROTOCOL_VERSION,
  isCommandName,
  signatureValid,
  type CommandMessage,
  type CommandPayload,
} from '../../lib/remoting/protocol.ts';

export type GuardVerdict =
  | { readonly accepted: true; readonly payload: CommandPayload }
  | { readonly accepted: false; readonly reason: string; readonly id?: string };

/**
 * Decides whether the agent runs a remote command (security invariant: "executes a remote command
 * only when it is signed by the controller identity pinned at enrollment, fresh, and not replayed").
 * Checks, in order: signature against the PINNED key (never a key the connection offers), payload
 * shape, this enrollment, this connection's channel, issuedAt within ±60 s, and an id not seen in
 * the window (ids are remembered until their issuedAt leaves the window, so the cache is bounded by
 * the command rate, and a command older than the window is refused as stale anyway).
 */
export class CommandGuard {
  private readonly seen = new Map<string, number>();
  private readonly publicKey: KeyObject;
  private readonly enrollment: string;
  private readonly now: () => number;

  constructor(options: { publicKey: KeyObject; enrollmentHash: string; now?: () => number }) {
    this.publicKey = options.publicKey;
    this.enrollment = options.enrollmentHash;
    this.now = options.now ?? Date.now;
  }

  check(message: CommandMessage, channel: string): GuardVerdict {
    if (typeof message.payload !== 'string' || typeof message.signature !== 'string') {
      return { accepted: false, reason: 'malformed command message' };
    }
    if (!signatureValid(this.publicKey, message)) {
      // The id of an unverified payload is only echoed in the refusal, so the sender stops waiting.
      const claimed = unverifiedId(message.payload);
      return {
        accepted: false,
        reason: 'signature does not verify against the pinned controller identity',
        ...(claimed ? { id: claimed } : {}),
      };
    }
    let payload: CommandPayload;
    try {
      payload = JSON.parse(message.payload) as CommandPayload;
    } catch {
      return { accepted: false, reason: 'signed payload is not JSON' };
    }
    const id = typeof payload.id === 'string' ? payload.id : undefined;
    const refuse = (reason: string): GuardVerdict => ({ accepted: false, reason, ...(id ? { id } : {}) });
    if (payload.v !== PROTOCOL_VERSION || !id || !isCommandName(payload.command)) {
      return refuse('unsupported command payload');
    }
    if (!payload.args || typeof payload.args !== 'object' || Array.isArray(payload.args)) {
      return refuse('command args must be an object');
    }
    if (payload.enrollment !== this.enrollment) return refuse('command is for another enrollment');
    if (payload.channel !== channel) return refuse('command was issued for another connection');
    const now = this.now();
    if (typeof payload.issuedAt !== 'number' || Math.abs(now - payload.issuedAt) > FRESHNESS_MS) {
      return refuse('command is not fresh (issuedAt outside ±60s)');
    }
    this.prune(now);
    if (this.seen.has(id)) return refuse('command id was already used (replay)');
    this.seen.set(id, payload.issuedAt + FRESHNESS_MS);
    return { accepted: true, payload };
  }

  private prune(now: number): void {
    for (const [id, expires] of this.seen) if (expires < now) this.seen.delete(id);
  }
}

function unverifiedId(payload: string): string | undefined {
  try {
    const id = (JSON.parse(payload) as { id?: unknown }).id;
    return typeof id === 'string' && id.length <= 64 ? id : undefined;
  } catch {
    return undefined;
  }
}
