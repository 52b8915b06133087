import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/logger.ts';
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
});
