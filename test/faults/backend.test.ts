import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { UNREACHABLE_IDP1, startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get, repeatVisits } from '../support/http.ts';
import { rawExchange } from '../support/raw-socket.ts';

/**
 * Share backends that are down, silent, or hang up mid-answer, behind a running frontend: the
 * visitor gets a clear 502 or 504 page (never a hang), other shares are served meanwhile, and the
 * share works again once its backend is back.
 */
const figures = suiteFigures('backend');
const provider = UNREACHABLE_IDP1;

let healthy: EchoBackend;
let silent: Server;
const held: Socket[] = [];
let hangsUp: HttpServer;
let flaky: HttpServer;
let flakyPort: number;
let fe: TestFrontend;

const portOf = (s: Server | HttpServer): number => (s.address() as { port: number }).port;
const listen = (s: Server | HttpServer, port = 0) => new Promise<void>((r) => s.listen(port, '127.0.0.1', r));

beforeAll(async () => {
  healthy = await startEchoBackend();
  silent = createServer((socket) => held.push(socket));
  hangsUp = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-length': 1000 });
    res.write('partial');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  flaky = createHttpServer((_req, res) => res.end('back'));
  await Promise.all([listen(silent), listen(hangsUp), listen(flaky)]);
  flakyPort = portOf(flaky);
  fe = await startTestFrontend({
    providers: [provider],
    shares: [
      { token: 'ok', target: healthy.url.href },
      { token: 'down', target: 'http://127.0.0.1:9' },
      { token: 'slow', target: `http://127.0.0.1:${portOf(silent)}` },
      { token: 'cut', target: `http://127.0.0.1:${portOf(hangsUp)}` },
      { token: 'flaky', target: `http://127.0.0.1:${flakyPort}` },
    ],
    limits: { backendTimeoutMs: 1_500 },
  });
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  for (const s of held) s.destroy();
  silent?.close();
  hangsUp?.closeAllConnections();
  hangsUp?.close();
  flaky?.closeAllConnections();
  flaky?.close();
  await healthy?.close();
});

describe('backend faults', () => {
  it('a backend that refuses connections: 502 "Backend unreachable"', async () => {
    const reply = await get(fe.port, fe.host('down'), '/');
    expect(reply.status).toBe(502);
    expect(reply.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(reply.body).toContain('Backend unreachable');
    figures.fault({
      fault: 'Backend down (connection refused)',
      injections: 1,
      outcome: '502 "Backend unreachable" page at once',
      lost: 0,
    });
  });

  it('a backend that never answers: 504 "Backend timeout" at the backend timeout, others served meanwhile', async () => {
    const started = Date.now();
    const waiting = get(fe.port, fe.host('slow'), '/');
    const visitor = repeatVisits(100, () => get(fe.port, fe.host('ok'), '/'));
    const reply = await waiting;
    const others = await visitor.stop();
    const tookMs = Date.now() - started;
    expect(reply.status).toBe(504);
    expect(reply.body).toContain('Backend timeout');
    expect(tookMs).toBeGreaterThanOrEqual(1_400);
    expect(others.length).toBeGreaterThan(5);
    expect(others.every((s) => s === 200)).toBe(true);
    const metrics = await get(fe.frontend.metricsPort as number, '127.0.0.1', '/metrics');
    expect(metrics.body).toMatch(/svc_frontend_requests_total\{outcome="upstream_error"\} [1-9]/);
    figures.fault({
      fault: 'Backend slow (accepts, never answers)',
      injections: 1,
      outcome: `504 "Backend timeout" page after ${tookMs} ms (backend timeout 1500 ms in the test, 120 s by default); ${others.length}/${others.length} requests to another share served meanwhile`,
      lost: 0,
    });
  });

  it('a backend that hangs up mid-answer: the visitor’s connection is closed, the frontend keeps serving', async () => {
    const reply = await rawExchange(fe.port, `GET / HTTP/1.1\r\nHost: ${fe.host('cut')}\r\n\r\n`, 10_000);
    expect(reply.text).toMatch(/^HTTP\/1\.1 200 [^]*\r\n\r\npartial$/);
    expect(reply.closedByServer).toBe(true);
    expect((await get(fe.port, fe.host('ok'), '/')).status).toBe(200);
    figures.fault({
      fault: 'Backend hangs up mid-response',
      injections: 1,
      outcome:
        'the visitor’s connection is closed after the partial body (it used to hang, waiting for the rest; fixed); other shares served',
      lost: 0,
    });
  });

  it('a backend that goes away and comes back: 502 while it is away, served again after', async () => {
    expect((await get(fe.port, fe.host('flaky'), '/')).body).toBe('back');
    flaky.closeAllConnections();
    await new Promise((r) => flaky.close(r));
    const away = await get(fe.port, fe.host('flaky'), '/');
    expect(away.status).toBe(502);
    flaky = createHttpServer((_req, res) => res.end('back'));
    await listen(flaky, flakyPort);
    const again = await get(fe.port, fe.host('flaky'), '/');
    expect([again.status, again.body]).toEqual([200, 'back']);
    figures.fault({
      fault: 'Backend restarted',
      injections: 1,
      outcome: '502 while away (no stale kept-alive connection reused), 200 at once when back',
      lost: 0,
    });
  });
});
