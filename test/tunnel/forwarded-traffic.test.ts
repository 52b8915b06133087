import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
import { TrafficTally } from '../../lib/share/traffic-tally.ts';
import type { ShareDirectory } from '../../lib/tunnel/directory.ts';
import { DEFAULT_TUNNEL_LIMITS } from '../../lib/tunnel/protocol.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import { tunnelledShares } from '../../sidecar/tunnel/routes.ts';
import { publishedShare, startPeerHolder, type PeerHolder } from '../support/peer-holder.ts';

/**
 * A request counted once across two frontend replicas: the replica a visitor reaches does not hold
 * the share's tunnel, so it forwards the request to the holder's peer listener (the target a
 * ReplicaLocator answers for a Lease of another replica), and only the holder counts it: the
 * forwarding replica's tally stays empty on the fast path (a bodiless GET) and on Node's server (a
 * POST with its body). Before the holder counted, the forwarding replica counted it, for an
 * environment it does not hold, which the controller drops: the console showed nothing of it.
 */
const DOMAIN = 'forwarded.localhost';
const HELD = 'envheldaaaaa';
let holder: PeerHolder;
let forwarder: RunningFrontend;
const forwarderTally = new TrafficTally();

function visit(method: string, body?: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { port: forwarder.port, host: '127.0.0.1', method, path: '/ok', headers: { host: `pub1.${DOMAIN}` } },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const fastPathCount = (): number =>
  forwarder.metrics.fastPathRequests.values().reduce((sum, sample) => sum + sample.value, 0);

beforeAll(async () => {
  const share = publishedShare('pub1', HELD);
  holder = await startPeerHolder(HELD, [share]);
  const directory: ShareDirectory = {
    lookup: (token) => (token === share.token ? share : undefined),
    authenticate: () => Promise.resolve(undefined),
    onRevoked: () => () => undefined,
  };
  const limits = DEFAULT_TUNNEL_LIMITS;
  const locator = new LocalTunnels(limits.maxTunnelsPerEnvironment);
  locator.attach(HELD, { ...holder.target(HELD), id: 'on-the-holder', openStreams: 0, close: () => undefined });
  const logger = createLogger('forwarder', { level: 'silent' });
  forwarder = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`http://${DOMAIN}:${port}`),
    domain: DOMAIN,
    shares: tunnelledShares({ directory, locator, limits, logger, traffic: forwarderTally }),
    logger,
  });
});

afterAll(async () => {
  await forwarder?.close();
  await holder?.close();
});

describe('a request forwarded to the replica holding the tunnel', () => {
  it('is counted by the holder only, on the fast path and on the slow path', async () => {
    const fastBefore = fastPathCount();
    expect(await visit('GET')).toEqual({ status: 200, bytes: 5_000 });
    expect(fastPathCount()).toBe(fastBefore + 1);
    expect(await visit('POST', 'y'.repeat(2_000))).toEqual({ status: 200, bytes: 5_000 });
    expect(fastPathCount()).toBe(fastBefore + 1);

    expect(await holder.counted(2)).toEqual([
      expect.objectContaining({ token: 'pub1', requests: 2, bytesIn: 2_000, errors: 0 }),
    ]);
    expect(forwarderTally.take(100)).toEqual([]);
  });
});
