import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createServer } from './node-http.ts';
import { outboundRequest } from './outbound-http.ts';

/** A real loopback server with one behaviour per path. */
let server: Server;
let base: string;
const seen: { method?: string; body?: string; length?: string } = {};
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/echo') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        Object.assign(seen, { method: req.method, body, length: req.headers['content-length'] });
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
      return;
    }
    if (req.url === '/redirect') return void res.writeHead(302, { location: '/echo' }).end();
    if (req.url === '/big') return void res.end(Buffer.alloc(4096, 'x'));
    if (req.url === '/drip') {
      // A byte every 50 ms, forever: only a deadline for the whole exchange ends it.
      res.writeHead(200);
      const timer = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const options = { timeoutMs: 2_000, maxBodyBytes: 1_024 } as const;

describe('outboundRequest', () => {
  it('sends a body with its length and returns status, headers and body', async () => {
    const reply = await outboundRequest(new URL('/echo', base), { ...options, method: 'POST', body: 'a=1&b=ü' });
    expect(reply.status).toBe(201);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.body.toString()).toBe('{"ok":true}');
    expect(seen).toEqual({ method: 'POST', body: 'a=1&b=ü', length: String(Buffer.byteLength('a=1&b=ü')) });
  });

  it('returns a redirect as it is, without following it', async () => {
    const reply = await outboundRequest(new URL('/redirect', base), { ...options, method: 'GET' });
    expect(reply.status).toBe(302);
    expect(reply.headers.location).toBe('/echo');
  });

  it('refuses a body above the cap', async () => {
    await expect(outboundRequest(new URL('/big', base), { ...options, method: 'GET' })).rejects.toThrow(
      'response larger than 1024 bytes',
    );
  });

  it('ends an exchange that keeps trickling at the deadline for the whole of it', async () => {
    const started = Date.now();
    await expect(
      outboundRequest(new URL('/drip', base), { method: 'GET', timeoutMs: 300, maxBodyBytes: 1 << 20 }),
    ).rejects.toThrow('timeout after 300 ms');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('names a refused connection and an unsupported scheme', async () => {
    const closed = new URL(base);
    closed.port = '1';
    await expect(outboundRequest(closed, { ...options, method: 'GET' })).rejects.toThrow(/ECONNREFUSED/);
    await expect(outboundRequest(new URL('ftp://127.0.0.1/'), { ...options, method: 'GET' })).rejects.toThrow(
      'unsupported URL scheme ftp:',
    );
  });
});
