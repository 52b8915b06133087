import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpHealthCheck, joinTargetPath } from './healthcheck.ts';

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function backend(
  handler: http.RequestListener,
): Promise<{ url: URL; seen: { method?: string; url?: string }[] }> {
  const seen: { method?: string; url?: string }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), seen };
}

const check = (target: URL, extra: Partial<Parameters<typeof httpHealthCheck>[0]> = {}) =>
  httpHealthCheck({ target, verb: 'GET', path: '/health', expectedStatus: 200, timeoutMs: 2000, ...extra });

describe('httpHealthCheck', () => {
  it('is healthy when the status matches, and sends the verb to target + path', async () => {
    const b = await backend((_req, res) => res.end('ok'));
    expect(await check(b.url, { verb: 'HEAD' })).toEqual({ healthy: true });
    expect(b.seen).toEqual([{ method: 'HEAD', url: '/health' }]);
  });

  it('reports a differing status with the exact seed text', async () => {
    const b = await backend((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    expect(await check(b.url)).toEqual({ healthy: false, error: "unexpected status code; got '503', want '200'" });
  });

  it('reports a closed port as a failed request with the low-level text', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await check(new URL(`http://127.0.0.1:${port}/`))).toEqual({
      healthy: false,
      error: `failed to execute request: connect ECONNREFUSED 127.0.0.1:${port}`,
    });
  });

  it('reports a backend that never answers as a timeout instead of hanging', async () => {
    const server = net.createServer(() => undefined); // accepts, never writes
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => server.close());
    const result = await check(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), {
      timeoutMs: 300,
    });
    expect(result).toEqual({
      healthy: false,
      error: 'failed to execute request: timed out after 300ms waiting for a response',
    });
  });

  it('does not read an endless body', async () => {
    const b = await backend((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024);
      const pump = () => {
        while (res.write(chunk));
      };
      res.on('drain', pump);
      pump();
    });
    expect(await check(b.url, { timeoutMs: 5000 })).toEqual({ healthy: true });
  });

  it('takes a redirect as the answer unless asked to follow it', async () => {
    const b = await backend((req, res) => {
      if (req.url === '/health') {
        res.writeHead(302, { location: '/ready' });
        res.end();
      } else res.end('ready');
    });
    expect(await check(b.url)).toEqual({ healthy: false, error: "unexpected status code; got '302', want '200'" });
    expect(await check(b.url, { expectedStatus: 302 })).toEqual({ healthy: true });
    expect(await check(b.url, { followRedirects: true })).toEqual({ healthy: true });
    expect(b.seen.map((s) => s.url)).toEqual(['/health', '/health', '/health', '/ready']);
  });

  it('refuses an invalid verb without sending anything', async () => {
    const b = await backend((_req, res) => res.end());
    expect(await check(b.url, { verb: 'GET /x' })).toEqual({
      healthy: false,
      error: 'failed to execute request: invalid HTTP verb "GET /x"',
    });
    expect(b.seen).toEqual([]);
  });
});

describe('joinTargetPath', () => {
  it('appends the path to a target with a path prefix and keeps the query', () => {
    expect(joinTargetPath(new URL('http://h:1/app/'), '/healthz?full=1').href).toBe('http://h:1/app/healthz?full=1');
    expect(joinTargetPath(new URL('http://h:1'), 'ready').href).toBe('http://h:1/ready');
  });
});
