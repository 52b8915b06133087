import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { createLogger } from '../../lib/logger.ts';
import { createServer } from '../../lib/node-http.ts';
import { startEchoBackend } from '../../test/support/backend.ts';
import { echoBackend, request } from '../../test/support/raw-http.ts';
import { listenHandler } from './listener.ts';
import { proxyBackend } from './proxy.ts';

const logger = createLogger('test', { level: 'silent' });
let backend: Awaited<ReturnType<typeof echoBackend>>;

beforeAll(async () => {
  backend = await echoBackend();
});
afterAll(async () => {
  await backend.close();
});

const spoofed = {
  'svc-auth-email': 'mallory@example.com',
  SVC_AUTH_PROVIDER: 'x',
  'svc.auth.expires': 'never',
  'x-kept': 'yes',
};

describe('proxy backend', () => {
  it('forwards method, path and query to the target with the target host, and strips identity look-alikes', async () => {
    const listener = await listenHandler(proxyBackend({ target: new URL(`${backend.url}/base/`), logger }), {
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const reply = await request(listener.port, '/x?y=1', {
        method: 'POST',
        host: 'share.example',
        headers: spoofed,
        body: 'b',
      });
      const seen = JSON.parse(reply.body) as { method: string; url: string; headers: Record<string, string> };
      expect(seen.method).toBe('POST');
      expect(seen.url).toBe('/base/x?y=1');
      expect(seen.headers.host).toBe(`127.0.0.1:${backend.port}`);
      expect(seen.headers['x-forwarded-host']).toBe('share.example');
      expect(seen.headers['x-kept']).toBe('yes');
      expect(Object.keys(seen.headers).filter((h) => h.replace(/[_.]/g, '-').startsWith('svc-auth-'))).toEqual([]);
    } finally {
      await listener.close();
    }
  });

  it('passes identity headers only when told to (behind the OAuth sidecar)', async () => {
    const listener = await listenHandler(
      proxyBackend({ target: new URL(backend.url), identityHeaders: 'pass', logger }),
      {
        host: '127.0.0.1',
        port: 0,
      },
    );
    try {
      const reply = await request(listener.port, '/', { headers: { 'svc-auth-email': 'alice@example.com' } });
      expect((JSON.parse(reply.body) as { headers: Record<string, string> }).headers['svc-auth-email']).toBe(
        'alice@example.com',
      );
    } finally {
      await listener.close();
    }
  });

  it('answers 502 when the target is down', async () => {
    const down = await echoBackend();
    await down.close();
    const listener = await listenHandler(proxyBackend({ target: new URL(down.url), logger }), {
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const reply = await request(listener.port, '/');
      expect(reply.status).toBe(502);
    } finally {
      await listener.close();
    }
  });

  it('reports a port in use clearly', async () => {
    const first = await listenHandler(proxyBackend({ target: new URL(backend.url), logger }), {
      host: '127.0.0.1',
      port: 0,
    });
    try {
      await expect(
        listenHandler(proxyBackend({ target: new URL(backend.url), logger }), { host: '127.0.0.1', port: first.port }),
      ).rejects.toThrow(`cannot listen on 127.0.0.1:${first.port}: address already in use`);
    } finally {
      await first.close();
    }
  });

  it('reuses kept-alive connections to the target and extends the forwarding headers of a proxy in front', async () => {
    let connections = 0;
    const target = createServer((req, res) => res.end(JSON.stringify(req.headers)));
    target.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    const listener = await listenHandler(
      proxyBackend({ target: new URL(`http://127.0.0.1:${(target.address() as AddressInfo).port}`), logger }),
      { host: '127.0.0.1', port: 0 },
    );
    try {
      const ingress = {
        'x-forwarded-for': '203.0.113.7',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'docs.share.example',
        'x-forwarded-port': '443',
      };
      const replies = [];
      for (let i = 0; i < 3; i++) replies.push(await request(listener.port, '/', { headers: ingress }));
      const seen = JSON.parse(replies[2]!.body) as Record<string, string>;
      expect(seen['x-forwarded-for']).toBe('203.0.113.7, 127.0.0.1');
      expect([seen['x-forwarded-proto'], seen['x-forwarded-host'], seen['x-forwarded-port']]).toEqual([
        'https',
        'docs.share.example',
        '443',
      ]);
      expect(connections).toBe(1);
      const direct = JSON.parse((await request(listener.port, '/', { host: 'share.example' })).body) as Record<
        string,
        string
      >;
      expect([direct['x-forwarded-proto'], direct['x-forwarded-port']]).toEqual(['http', String(listener.port)]);
    } finally {
      await listener.close();
      target.closeAllConnections();
      target.close();
    }
  });

  it('answers 504 when the target accepts but stays silent past the backend timeout', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const listener = await listenHandler(
      proxyBackend({
        target: new URL(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`),
        logger,
        backendTimeoutMs: 300,
      }),
      { host: '127.0.0.1', port: 0 },
    );
    try {
      const reply = await request(listener.port, '/', { timeoutMs: 5_000 });
      expect(reply.status).toBe(504);
    } finally {
      await listener.close();
      silent.closeAllConnections();
      silent.close();
    }
  });

  it('carries WebSocket upgrades without identity look-alikes', async () => {
    const echo = await startEchoBackend();
    const listener = await listenHandler(proxyBackend({ target: echo.url, logger }), { host: '127.0.0.1', port: 0 });
    try {
      const socket = new WebSocket(`ws://127.0.0.1:${listener.port}/live`, {
        headers: { 'svc-auth-email': 'mallory@example.com' },
      });
      const echoed = await new Promise<string>((resolve, reject) => {
        socket.once('open', () => socket.send('ping'));
        socket.once('message', (data: Buffer) => resolve(data.toString('utf8')));
        socket.once('error', reject);
      });
      socket.close();
      expect(echoed).toBe('echo:ping:');
      expect(echo.seen.find((r) => r.method === 'UPGRADE')?.headers['svc-auth-email']).toBeUndefined();
    } finally {
      await listener.close();
      await echo.close();
    }
  });
});
