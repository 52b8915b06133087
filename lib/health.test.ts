import { afterEach, describe, expect, it } from 'vitest';
import { Counter, Registry } from './prometheus.ts';
import { startHealthServer, type HealthServer } from './health.ts';

describe('startHealthServer', () => {
  let server: HealthServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  const get = async (path: string, method = 'GET') => {
    const res = await fetch(`http://127.0.0.1:${server?.port}${path}`, { method });
    return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
  };

  it('answers /healthz always, /readyz with the detail, /metrics from the registry, by exact path', async () => {
    let ready = false;
    const registry = new Registry();
    registry.register(new Counter('probe_test_total', 'a counter', [])).inc(3);
    server = await startHealthServer(
      { host: '127.0.0.1', port: 0 },
      { registry, ready: () => ({ ok: ready, detail: ready ? 'ok: leading' : 'caches not synced' }) },
    );
    expect(await get('/healthz')).toMatchObject({ status: 200, text: 'ok\n' });
    expect(await get('/readyz')).toMatchObject({ status: 503, text: 'caches not synced\n' });
    ready = true;
    expect(await get('/readyz?verbose')).toMatchObject({ status: 200, text: 'ok: leading\n' });
    expect((await get('/metrics')).text).toContain('probe_test_total 3');
    expect(await get('/healthz/')).toMatchObject({
      status: 404,
      text: 'not found: this listener serves /healthz, /readyz, /metrics\n',
    });
    expect((await get('/healthz', 'POST')).status).toBe(405);
  });

  it('serves only /healthz when given neither readiness nor metrics', async () => {
    server = await startHealthServer({ host: '127.0.0.1', port: 0 }, {});
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(404);
    expect((await get('/metrics')).status).toBe(404);
  });

  it('names the address when it cannot listen', async () => {
    server = await startHealthServer({ host: '127.0.0.1', port: 0 }, {});
    await expect(startHealthServer({ host: '127.0.0.1', port: server.port }, {}, 'operator')).rejects.toThrow(
      `operator: cannot listen on 127.0.0.1:${server.port}: address already in use`,
    );
  });

  it('fails /healthz with the detail while `live` says the process is wedged', async () => {
    let live = { ok: false, detail: 'wedged: the Share work queue has 3 keys waiting' };
    server = await startHealthServer({ host: '127.0.0.1', port: 0 }, { live: () => live });
    expect(await get('/healthz')).toMatchObject({
      status: 503,
      text: 'wedged: the Share work queue has 3 keys waiting\n',
    });
    live = { ok: true, detail: 'ok' };
    expect(await get('/healthz')).toMatchObject({ status: 200, text: 'ok\n' });
  });
});
