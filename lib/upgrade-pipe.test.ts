import type { IncomingMessage, Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from './node-http.ts';
import { pipeUpgrade } from './upgrade-pipe.ts';

/** Real loopback servers: a front that passes every upgrade on with pipeUpgrade, and a backend per test. */
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

async function listening(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function front(backendPort: number, timeoutMs = 5_000): Promise<number> {
  const server = createServer((_req, res) => res.end());
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    pipeUpgrade(req, socket, head, {
      host: '127.0.0.1',
      port: backendPort,
      path: `/base${req.url ?? '/'}`,
      secure: false,
      headers: ['host', `app.internal:${backendPort}`, 'connection', 'Upgrade', 'upgrade', 'echo'],
      timeoutMs,
    }),
  );
  return listening(server);
}

/** Sends a raw upgrade request and collects what comes back until the connection closes (or `until` matches). */
function upgrade(port: number, extra = '', until?: RegExp): Promise<{ text: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (until?.test(text)) resolve({ text, socket });
    });
    socket.on('close', () => resolve({ text, socket }));
    socket.on('error', reject);
    socket.write(`GET /chat HTTP/1.1\r\nHost: share.example\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n${extra}`);
  });
}

describe('pipeUpgrade', () => {
  it("switches with the backend's 101, then joins the sockets both ways (early bytes included)", async () => {
    const seen: { url?: string; host?: string } = {};
    const backend = createServer();
    backend.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      Object.assign(seen, { url: req.url, host: req.headers.host });
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Chosen: yes\r\n\r\n');
      if (head.length > 0) socket.write(Buffer.concat([Buffer.from('echo:'), head]));
      socket.on('data', (data: Buffer) => socket.write(Buffer.concat([Buffer.from('echo:'), data])));
    });
    const port = await front(await listening(backend));
    const { text, socket } = await upgrade(port, 'early', /echo:early/);
    expect(text).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(text).toContain('X-Chosen: yes');
    expect(seen).toEqual({ url: '/base/chat', host: `app.internal:${(backend.address() as AddressInfo).port}` });
    const echoed = new Promise<string>((resolve) => socket.once('data', (d: Buffer) => resolve(d.toString())));
    socket.write('later');
    expect(await echoed).toBe('echo:later');
    socket.destroy();
  });

  it('relays a refusal with its body, re-framed for a connection that closes after it', async () => {
    const backend = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.write('not ');
      res.end('here');
    });
    const port = await front(await listening(backend));
    const { text } = await upgrade(port);
    const [head = '', body] = text.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(head.toLowerCase()).not.toContain('transfer-encoding');
    expect(head).toContain('Connection: close');
    expect(body).toBe('not here');
  });

  it("closes the visitor's connection when the backend does not answer in time, and when it is down", async () => {
    const silent = createServer();
    silent.on('upgrade', () => undefined);
    const started = Date.now();
    expect((await upgrade(await front(await listening(silent), 300))).text).toBe('');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect((await upgrade(await front(9))).text).toBe('');
  });

  it("passes the visitor's leaving on to the backend after the switch, and closes both sides", async () => {
    let backendClosed: () => void = () => undefined;
    const closed = new Promise<void>((resolve) => (backendClosed = resolve));
    const backend = createServer();
    backend.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n');
      // As a WebSocket server does when the peer's connection ends.
      socket.on('end', () => socket.end());
      socket.on('close', () => backendClosed());
    });
    const { socket } = await upgrade(await front(await listening(backend)), '', /\r\n\r\n/);
    const visitorClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.end();
    await Promise.all([closed, visitorClosed]);
  });
});
