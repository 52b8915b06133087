import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteFigures } from '../support/figures.ts';
import { publishedShare, startPeerHolder, type PeerHolder, type PeerStreamRequest } from '../support/peer-holder.ts';

/**
 * A holder of the replicas' shared credential (a stolen one, or a compromised replica) on a
 * replica's peer listener, which counts the requests other replicas forward to it (peer-traffic.ts)
 * and reports them for the environments it holds: it tries to put traffic on shares of another
 * account's environment, whose tunnel this replica does not hold, by naming them in every way the
 * `:authority`, the environment header, the route and the method can be bent. The share of the
 * environment held here is counted only for what really went through its tunnel.
 */
const figures = suiteFigures('peer-traffic');
afterAll(() => figures.write());

const HELD = 'envaliceaaaa';
const OTHER = 'envbobbbbbbb';
let holder: PeerHolder;

beforeAll(async () => {
  holder = await startPeerHolder(HELD, [
    publishedShare('alice1', HELD),
    publishedShare('bob1', OTHER),
    publishedShare('bobpriv1', OTHER, { shareMode: 'private' }),
  ]);
});
afterAll(() => holder?.close());

/** Ways to name bob's share on a stream this replica serves or refuses. */
const ATTEMPTS: readonly PeerStreamRequest[] = [
  { authority: 'bob1.share.example.com' },
  { authority: 'BOB1.share.example.com:443' },
  { authority: 'bob1' },
  { authority: 'bob1.share.example.com', body: 'x'.repeat(10_000) },
  { authority: 'bob1.share.example.com', path: '/fail' },
  { authority: 'bob1.share.example.com', route: 'access' },
  { authority: 'bob1.share.example.com', route: null },
  { authority: 'bob1.share.example.com', method: 'CONNECT' },
  { authority: 'bobpriv1.share.example.com' },
  { authority: 'bob1.share.example.com', headers: { host: 'alice1.share.example.com' } },
  { authority: 'alice1.share.example.com', envZId: OTHER },
  { authority: 'bob1.share.example.com', envZId: OTHER },
  { authority: 'alice1.share.example.com', envZId: '' },
  { authority: 'alice1.share.example.com', credential: 'x'.repeat(48) },
];

describe("a stolen replica credential on a replica's peer listener", () => {
  it("puts no traffic on another environment's share, nor on the held one's without its tunnel", async () => {
    const tally = figures.attackClass(
      'Peer stream with the replicas’ credential names a share of an environment this replica does not hold',
    );
    let foreign = 0;
    for (const attempt of ATTEMPTS) {
      await tally.run(async () => {
        await holder.send(attempt);
        // One honest request of alice's share after each: the tally holds it, and nothing else.
        expect((await holder.send({ authority: 'alice1.share.example.com' })).status).toBe(200);
        const entries = await holder.counted(1);
        foreign += entries.filter((e) => e.token !== 'alice1').reduce((sum, e) => sum + e.requests, 0);
        expect(entries).toEqual([expect.objectContaining({ token: 'alice1', requests: 1 })]);
      });
    }
    figures.measure('requests counted for a share the replica does not hold, of 14 peer streams', foreign);
  });
});
