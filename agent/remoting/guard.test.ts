import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CommandGuard } from './guard.ts';
import { FRESHNESS_MS, enrollmentHash, signCommand } from '../../lib/remoting/protocol.ts';

describe('CommandGuard', () => {
  const controller = generateKeyPairSync('ed25519');
  const other = generateKeyPairSync('ed25519');
  const enrollment = enrollmentHash('svce_aaaaaaaaaaaa_secret');
  let clock = 1_000_000_000_000;
  const guard = () =>
    new CommandGuard({ publicKey: controller.publicKey, enrollmentHash: enrollment, now: () => clock });
  const sign = (
    fields: { now?: number; channel?: string; key?: typeof controller.privateKey; enrollment?: string } = {},
  ) =>
    signCommand(fields.key ?? controller.privateKey, {
      channel: fields.channel ?? 'channel-0123456789',
      enrollment: fields.enrollment ?? enrollment,
      command: 'status',
      args: {},
      now: fields.now ?? clock,
    }).message;

  it('accepts a fresh command signed by the pinned key for this enrollment and connection', () => {
    const verdict = guard().check(sign(), 'channel-0123456789');
    expect(verdict).toMatchObject({ accepted: true, payload: { command: 'status', issuedAt: clock } });
  });

  it('refuses another key, a tampered payload, another enrollment, another connection', () => {
    const g = guard();
    expect(g.check(sign({ key: other.privateKey }), 'channel-0123456789')).toMatchObject({
      accepted: false,
      reason: 'signature does not verify against the pinned controller identity',
    });
    const m = sign();
    expect(g.check({ ...m, payload: m.payload.replace('status', 'ping') }, 'channel-0123456789').accepted).toBe(false);
    expect(g.check({ ...m, signature: 'x' }, 'channel-0123456789').accepted).toBe(false);
    expect(g.check(sign({ enrollment: enrollmentHash('svce_other') }), 'channel-0123456789')).toMatchObject({
      reason: 'command is for another enrollment',
    });
    expect(g.check(sign(), 'channel-other-connection')).toMatchObject({
      reason: 'command was issued for another connection',
    });
  });

  it('refuses commands issued more than 60 s before or after the agent clock', () => {
    const g = guard();
    expect(g.check(sign({ now: clock - FRESHNESS_MS }), 'channel-0123456789').accepted).toBe(true);
    expect(g.check(sign({ now: clock - FRESHNESS_MS - 1 }), 'channel-0123456789')).toMatchObject({
      reason: 'command is not fresh (issuedAt outside ±60s)',
    });
    expect(g.check(sign({ now: clock + FRESHNESS_MS + 1 }), 'channel-0123456789').accepted).toBe(false);
  });

  it('refuses a replay inside the window, and the same command later as stale', () => {
    const g = guard();
    const m = sign();
    expect(g.check(m, 'channel-0123456789').accepted).toBe(true);
    expect(g.check(m, 'channel-0123456789')).toMatchObject({ reason: 'command id was already used (replay)' });
    clock += FRESHNESS_MS - 1;
    expect(g.check(m, 'channel-0123456789')).toMatchObject({ reason: 'command id was already used (replay)' });
    clock += 2;
    expect(g.check(m, 'channel-0123456789')).toMatchObject({ reason: 'command is not fresh (issuedAt outside ±60s)' });
  });
});
