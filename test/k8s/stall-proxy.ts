import { connect, createServer, type Server, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A TCP proxy between a client and the API server that the test can switch to black-hole the
 * connection: `stall()` stops forwarding in both directions on every open connection (bytes are
 * read and dropped, nothing is closed or reset) and holds new connections without connecting them;
 * `pass()` forwards new connections again while the stalled ones stay dead, as a network partition
 * that heals leaves them. TLS passes through untouched (the API server's certificate is for
 * 127.0.0.1, which this proxy listens on).
 */
export interface StallProxy {
  readonly port: number;
  /** `kubeConfig` with its server pointed at the proxy. */
  readonly kubeConfig: KubeConfig;
  stall(): void;
  pass(): void;
  /** Connections accepted so far (stalled ones included). */
  readonly accepted: number;
  close(): Promise<void>;
}

export async function startStallProxy(kubeConfig: KubeConfig): Promise<StallProxy> {
  const target = new URL(kubeConfig.getCurrentCluster()?.server ?? '');
  let stalled = false;
  let accepted = 0;
  const pairs = new Set<{ client: Socket; upstream?: Socket; dead: boolean }>();
  const blackHole = (pair: { client: Socket; upstream?: Socket; dead: boolean }): void => {
    pair.dead = true;
    for (const s of [pair.client, pair.upstream]) {
      if (!s) continue;
      s.unpipe();
      s.removeAllListeners('data');
      s.on('data', () => {});
      s.resume();
    }
  };
  const server: Server = createServer((client) => {
    accepted++;
    const pair: { client: Socket; upstream?: Socket; dead: boolean } = { client, dead: false };
    pairs.add(pair);
    client.on('error', () => {});
    client.on('close', () => {
      pair.upstream?.destroy();
      pairs.delete(pair);
    });
    if (stalled) {
      blackHole(pair);
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    pair.upstream = upstream;
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => {
      if (!pair.dead) client.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const proxied = new KubeConfig();
  proxied.loadFromOptions({
    clusters: kubeConfig.clusters.map((c) => ({ ...c, server: `${target.protocol}//127.0.0.1:${port}` })),
    users: kubeConfig.users,
    contexts: kubeConfig.contexts,
    currentContext: kubeConfig.currentContext,
  });
  return {
    port,
    kubeConfig: proxied,
    get accepted() {
      return accepted;
    },
    stall() {
      stalled = true;
      for (const pair of pairs) blackHole(pair);
    },
    pass() {
      stalled = false;
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
