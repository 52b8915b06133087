import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import type { ClientRequest, IncomingMessage, Server } from 'node:http';
import { createServer, request } from './node-http.ts';
import { BackendIdleWatch, BackendTimeout } from './backend-idle.ts';

/** Real loopback backends: one that never answers, one that answers a byte at a time. */
let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/silent') return; // accepts, never answers
    res.writeHead(200, { 'content-type': 'text/plain' });
    let sent = 0;
    const drip = setInterval(() => {
      res.write('x');
      if (++sent === 8) {
        clearInterval(drip);
        res.end();
      }
    }, 100);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

function send(path: string): { req: ClientRequest; outcome: Promise<{ error?: Error; body?: string; ms: number }> } {
  const started = Date.now();
  const req = request({ host: '127.0.0.1', port, path });
  const outcome = new Promise<{ error?: Error; body?: string; ms: number }>((resolve) => {
    req.on('error', (error) => resolve({ error, ms: Date.now() - started }));
    req.on('response', (res: IncomingMessage) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ body, ms: Date.now() - started }));
      res.on('error', (error) => resolve({ error, ms: Date.now() - started }));
    });
  });
  req.end();
  return { req, outcome };
}

describe('BackendIdleWatch', () => {
  it('destroys a request whose backend stays silent, at the timeout plus at most two sweeps', async () => {
    const watch = new BackendIdleWatch(300);
    const { req, outcome } = send('/silent');
    watch.add(req);
    const { error, ms } = await outcome;
    expect(error).toBeInstanceOf(BackendTimeout);
    expect(error?.message).toBe('no answer from the backend within 300 ms');
    expect(ms).toBeGreaterThanOrEqual(300);
    expect(ms).toBeLessThan(300 + 2 * 30 + 200);
    watch.close();
  });

  it('never cuts an answer that keeps arriving, however long it takes in all', async () => {
    const watch = new BackendIdleWatch(300);
    const { req, outcome } = send('/drip');
    const watched = watch.add(req);
    const { error, body, ms } = await outcome;
    expect(error).toBeUndefined();
    expect(body).toBe('xxxxxxxx');
    expect(ms).toBeGreaterThan(700);
    watch.done(watched);
    watch.close();
  });

  it('leaves alone a request that is done', async () => {
    const watch = new BackendIdleWatch(100);
    const { req, outcome } = send('/silent');
    watch.done(watch.add(req));
    const settled = await Promise.race([
      outcome.then(() => 'settled'),
      new Promise((r) => setTimeout(() => r('open'), 400)),
    ]);
    expect(settled).toBe('open');
    req.destroy();
    watch.close();
  });
});
