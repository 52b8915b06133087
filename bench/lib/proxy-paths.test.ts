import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startProxyPath } from './proxy-paths.ts';

/** A backend that answers with the path it was asked for and counts the connections it was given. */
async function startCountingBackend(): Promise<{ url: string; connections: Socket[]; server: Server }> {
  const connections: Socket[] = [];
  const server = createServer((req, res) => res.end(`you asked for ${req.url}`));
  server.on('connection', (socket) => connections.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, connections, server };
}

function get(url: string, path: string, agent: Agent): Promise<{ status: number | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    request(new URL(path, url), { agent }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    })
      .on('error', reject)
      .end();
  });
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the byte relay (the floor of a Node proxy in bench:frontend)', () => {
  it("relays a visitor connection's requests on one backend connection of its own, and closes it with the visitor's", async () => {
    const backend = await startCountingBackend();
    cleanups.push(() => new Promise<void>((resolve) => backend.server.close(() => resolve())));
    backend.server.keepAliveTimeout = 60_000;
    const relay = await startProxyPath({ path: 'relay', upstream: backend.url });
    cleanups.push(() => relay.close());

    const first = new Agent({ keepAlive: true, maxSockets: 1 });
    const replies = [];
    for (const path of ['/a', '/b', '/c']) replies.push(await get(relay.url, path, first));
    expect(replies).toEqual(['/a', '/b', '/c'].map((path) => ({ status: 200, body: `you asked for ${path}` })));
    expect(backend.connections).toHaveLength(1);

    const second = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(relay.url, '/d', second)).toEqual({ status: 200, body: 'you asked for /d' });
    expect(backend.connections).toHaveLength(2);

    const closed = new Promise((resolve) => backend.connections[0]?.once('close', resolve));
    first.destroy();
    await closed;
    expect(backend.connections[0]?.destroyed).toBe(true);
    expect(backend.connections[1]?.destroyed).toBe(false);
    second.destroy();
  });
});
