import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PEER_CREDENTIAL, publishedShare, startPeerHolder, type PeerHolder } from '../../test/support/peer-holder.ts';

/**
 * The holder's count of requests other replicas forward to it, over real HTTP/2 sessions: streams
 * sent to this replica's peer listener are forwarded into the tunnel of the environment it holds
 * (a session to an HTTP/2 server standing in for the agent) and counted in its TrafficTally: once
 * per request, with its bytes and its failure, only for a public share of the environment the
 * stream goes into.
 */
const HELD = 'envheldaaaaa';
let holder: PeerHolder;

beforeAll(async () => {
  holder = await startPeerHolder(HELD, [
    publishedShare('pub1', HELD),
    publishedShare('priv1', HELD, { shareMode: 'private' }),
  ]);
});
afterAll(() => holder?.close());

describe('requests forwarded to the replica holding the tunnel', () => {
  it('are marked for the holder to count, so the forwarding replica leaves them alone', () => {
    expect(holder.target(HELD).countedByHolder).toBe(true);
  });

  it('are counted by the holder once each, with the body in, the head and body out', async () => {
    const posted = holder.target(HELD).open({
      ':method': 'POST',
      ':path': '/ok',
      ':authority': 'pub1.peer.localhost:8443',
      'svc-tunnel-route': 'public',
    });
    posted.end('y'.repeat(1_000));
    posted.resume();
    await new Promise((resolve) => posted.once('close', resolve));
    expect(await holder.send()).toEqual({ status: 200, bytes: 5_000, reset: false });
    const [entry, ...rest] = await holder.counted(2);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({ token: 'pub1', requests: 2, bytesIn: 1_000, errors: 0 });
    // Two bodies of 5,000 bytes, each with a head of its status line and header lines.
    expect(entry?.bytesOut).toBeGreaterThan(2 * 5_000 + 2 * 'HTTP/1.1 200 OK\r\n\r\n'.length);
    expect(entry?.bytesOut).toBeLessThan(2 * 5_000 + 2 * 300);
  });

  it('count a 5xx answer and a response cut short as errors', async () => {
    expect(await holder.send({ path: '/fail' })).toMatchObject({ status: 500 });
    expect(await holder.send({ path: '/cut' })).toMatchObject({ status: 200, reset: true });
    expect(await holder.counted(2)).toEqual([expect.objectContaining({ token: 'pub1', requests: 2, errors: 2 })]);
  });

  it('are not counted for a private or unknown share, a WebSocket, or a refused peer', async () => {
    expect(await holder.send({ authority: 'priv1.peer.localhost', route: 'access' })).toMatchObject({ status: 200 });
    expect(await holder.send({ authority: 'priv1.peer.localhost' })).toMatchObject({ status: 200 });
    expect(await holder.send({ authority: 'nosuch1.peer.localhost' })).toMatchObject({ status: 200 });
    expect(await holder.send({ method: 'CONNECT' })).toMatchObject({ status: 200 });
    expect(await holder.send({ credential: `${PEER_CREDENTIAL}x` })).toMatchObject({ status: 401 });
    // The holder decides whether to count when a stream arrives: none of those got a counter. One
    // request of the held share, sent last, is all the tally holds once it is counted.
    expect(await holder.send()).toMatchObject({ status: 200 });
    expect(await holder.counted(1)).toEqual([expect.objectContaining({ token: 'pub1', requests: 1, errors: 0 })]);
  });
});
