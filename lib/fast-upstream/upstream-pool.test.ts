import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UpstreamPool, type Upstream } from './upstream-pool.ts';

describe('UpstreamPool', () => {
  let server: ReturnType<typeof createServer>;
  let port: number;
  const accepted: Socket[] = [];
  const pool = new UpstreamPool();
  const take = (fresh = false): Upstream => {
    const upstream = pool.take('127.0.0.1', port, fresh);
    if (!upstream) throw new Error('the pool refused a connection');
    return upstream;
  };

  beforeEach(async () => {
    server = createServer((socket) => accepted.push(socket));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    pool.close();
    for (const socket of accepted.splice(0)) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('hands out the connection given back, flowing again if its last user had paused it', async () => {
    const first = take();
    await once(first.socket, 'connect');
    first.socket.pause();
    pool.give(first);
    expect(first.socket.isPaused()).toBe(false);
    const second = take();
    expect(second).toBe(first);
    expect(second.reused).toBe(true);
    expect(take(true)).not.toBe(first);
  });

  it('opens at most 256 connections to one backend, a fresh one for a retry excepted', async () => {
    const open = Array.from({ length: 256 }, () => take());
    expect(pool.take('127.0.0.1', port, false)).toBeUndefined();
    const retry = take(true);
    retry.socket.destroy();
    open[0]?.socket.destroy();
    await Promise.all([once(retry.socket, 'close'), once(open[0]?.socket as Socket, 'close')]);
    expect(take()).toBeDefined();
    for (const upstream of open) upstream.socket.destroy();
  });

  it('forgets an idle connection the backend closes, and drops one that speaks while idle', async () => {
    const closing = take();
    const talking = take();
    await Promise.all([once(closing.socket, 'connect'), once(talking.socket, 'connect')]);
    while (accepted.length < 2) await new Promise((r) => setTimeout(r, 5));
    pool.give(closing);
    pool.give(talking);
    const byPort = (upstreamPort: number | undefined) => accepted.find((s) => s.remotePort === upstreamPort);
    byPort(closing.socket.localPort)?.end();
    byPort(talking.socket.localPort)?.write('unasked');
    await Promise.all([once(closing.socket, 'close'), once(talking.socket, 'close')]);
    const next = take();
    expect(next).not.toBe(closing);
    expect(next).not.toBe(talking);
    expect(next.reused).toBe(false);
  });
});
