import { createServer, type Server, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeApiError, KubeClient } from './client.ts';
import type { WatchEvent } from './resources.ts';

function kubeConfig(port: number): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A TCP server that accepts connections and never answers: a black-holed API server. */
async function blackHole(): Promise<{ port: number; sockets: Socket[]; closed: () => number }> {
  const sockets: Socket[] = [];
  let closed = 0;
  const server: Server = createServer((s) => {
    sockets.push(s);
    s.resume(); // read and drop whatever arrives
    s.on('close', () => closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { port: (server.address() as { port: number }).port, sockets, closed: () => closed };
}

async function httpServer(handler: Parameters<typeof createHttpServer>[1]): Promise<number> {
  const server: HttpServer = createHttpServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return (server.address() as { port: number }).port;
}

describe('KubeClient deadlines', () => {
  it('fails a call the API server never answers after the request timeout, and drops its connection', async () => {
    const hole = await blackHole();
    const client = await KubeClient.create(kubeConfig(hole.port), () => {}, { requestTimeoutMs: 300 });
    closers.push(() => client.close());
    const err = await client.get('/api/v1/namespaces/default').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ code: 'kube_unreachable', status: 503, reason: 'Timeout' });
    expect((err as Error).message).toBe('GET /api/v1/namespaces/default: no answer within 300 ms');
    await new Promise((r) => setTimeout(r, 50));
    expect(hole.sockets.length).toBe(1);
    expect(hole.closed()).toBe(1);
  });

  it('fails a call whose answer stalls halfway', async () => {
    const port = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"kind":');
    });
    const client = await KubeClient.create(kubeConfig(port), () => {}, { requestTimeoutMs: 300 });
    closers.push(() => client.close());
    await expect(client.get('/api/v1/namespaces/default')).rejects.toMatchObject({ reason: 'Timeout' });
  });

  it('fails a watch whose headers never come, and one that goes silent past its idle deadline', async () => {
    const hole = await blackHole();
    const silent = await KubeClient.create(kubeConfig(hole.port), () => {}, { requestTimeoutMs: 300 });
    closers.push(() => silent.close());
    await expect(silent.watch('/api/v1/pods', {}, () => {})).rejects.toMatchObject({ reason: 'Timeout' });

    const bookmark = `${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } })}\n`;
    const port = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(bookmark);
      // ...and then nothing, with the connection open.
    });
    const client = await KubeClient.create(kubeConfig(port), () => {}, { requestTimeoutMs: 300 });
    closers.push(() => client.close());
    const seen: WatchEvent[] = [];
    let opened = 0;
    const started = Date.now();
    const err = await client
      .watch('/api/v1/pods', {}, (e) => seen.push(e), { idleTimeoutMs: 400, onOpen: () => opened++ })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'kube_unreachable', reason: 'WatchIdle' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(opened).toBe(1);
    expect(seen.map((e) => e.type)).toEqual(['BOOKMARK']);
  });

  it('keeps a watch that hears bookmarks within its idle deadline, until the server ends it', async () => {
    const bookmark = `${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } })}\n`;
    const port = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      let n = 0;
      const timer = setInterval(() => {
        res.write(bookmark);
        if (++n === 6) {
          clearInterval(timer);
          res.end();
        }
      }, 100);
    });
    const client = await KubeClient.create(kubeConfig(port), () => {}, { requestTimeoutMs: 300 });
    closers.push(() => client.close());
    let events = 0;
    await client.watch('/api/v1/pods', {}, () => events++, { idleTimeoutMs: 250 });
    expect(events).toBe(6);
  });

  it('refuses a timeout that is not a positive integer', async () => {
    await expect(KubeClient.create(kubeConfig(1), () => {}, { requestTimeoutMs: 0 })).rejects.toThrow(
      'requestTimeoutMs must be a positive integer, got 0',
    );
  });
});
