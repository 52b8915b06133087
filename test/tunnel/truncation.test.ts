import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import type { RunningListener } from '../../agent/backends/listener.ts';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import { DEFAULT_TUNNEL_LIMITS, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import type { RunningFrontend } from '../../sidecar/frontend.ts';
import type { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import type { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import { suiteFigures } from '../support/figures.ts';
import {
  startPrivateAccess,
  startTunnelFrontend,
  TWO_MACHINES,
  twoMachineDirectory,
} from '../support/tunnel-frontend.ts';
import { tunnelTransport } from '../support/tunnel-transport.ts';
import { until } from '../support/until.ts';

/**
 * A body cut short anywhere on the tunnel's path must reach the other end as a failure, never as a
 * complete body: the visitor's HTTP/1.1 connection is cut (its response not `complete`), the
 * backend's request is aborted. Real frontend, tunnel and access clients on loopback, and a backend
 * that sends part of a body and then holds it (for the tunnel to be dropped) or hangs up.
 */
const figures = suiteFigures(tunnelTransport() === 'direct' ? 'tunnel-truncation' : 'tunnel-truncation-websocket');
const DOMAIN = 'truncation.localhost';
const OWNER = TWO_MACHINES.owner;
const PART = 'p'.repeat(1000);
const WHOLE = 4 * PART.length;

const directory = twoMachineDirectory();

/** Sockets of responses the backend is holding mid-body, and the uploads it saw end. */
const holding = new Set<Socket>();
const uploads: { complete: boolean; bytes: number }[] = [];
let uploadsStarted = 0;
let backendUrl: string;
let backend: http.Server;
let frontend: RunningFrontend;
let endpoint: TunnelEndpoint;
let locator: LocalTunnels;
let tunnel: RunningTunnel | undefined;
let access: RunningAccessClient;
let listener: RunningListener;
let frontendPort: number;
const injections: string[] = [];

/**
 * `/<framing>/<ending>`: framing `chunked` or `length` (a content-length of the whole body), ending
 * `whole` (the body sent whole), `hold` (one part sent, then held) or `hangup` (one part sent, then
 * the backend's connection destroyed). `/upload` records whether the request body arrived whole.
 */
function startBackend(): Promise<string> {
  backend = http.createServer((req, res) => {
    if (req.url === '/upload') {
      uploadsStarted++;
      let bytes = 0;
      req.on('data', (c: Buffer) => (bytes += c.length));
      req.on('close', () => uploads.push({ complete: req.complete, bytes }));
      req.on('end', () => res.end('ok\n'));
      return;
    }
    const [, framing, ending] = (req.url ?? '').split('/');
    res.writeHead(200, framing === 'length' ? { 'content-length': WHOLE } : {});
    if (ending === 'whole') return void res.end(PART.repeat(4));
    res.write(PART);
    if (ending === 'hold') holding.add(req.socket);
    else setTimeout(() => req.socket.destroy(), 100);
  });
  return new Promise((resolve) =>
    backend.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(backend.address() as AddressInfo).port}`)),
  );
}

interface Visit {
  status: number;
  complete: boolean;
  body: number;
}

/** One GET as a visitor: settles however the response ends, with whether it arrived complete. */
function visit(port: number, path: string, host: string, onHead?: () => void): Promise<Visit> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, headers: { host } }, (res) => {
      let body = 0;
      res.on('data', (c: Buffer) => {
        if (body === 0) onHead?.();
        body += c.length;
      });
      const settle = () => resolve({ status: res.statusCode ?? 0, complete: res.complete, body });
      res.on('end', settle);
      res.on('close', settle);
      res.on('error', settle);
    });
    req.on('error', () => resolve({ status: 0, complete: false, body: 0 }));
  });
}

async function connectTunnel(): Promise<RunningTunnel> {
  const shares = new Map<string, TunnelledShare>([
    ['pub1', { shareMode: 'public', backendUrl: new URL(backendUrl) }],
    ['priv1', { shareMode: 'private', backendUrl: new URL(backendUrl) }],
  ]);
  const running = startTunnel({
    transport: tunnelTransport(),
    url: tunnelUrl(`http://127.0.0.1:${frontendPort}`, TUNNEL_PATH),
    token: OWNER,
    logger: createLogger('agent', { level: 'silent' }),
    resolve: (t) => shares.get(t),
    backoff: { baseMs: 50, maxMs: 200 },
  });
  await until(() => running.connected && locator.find('aaaaaaaaaaaa') !== undefined, 'the tunnel', 10_000, 25);
  return running;
}

beforeAll(async () => {
  backendUrl = await startBackend();
  ({ frontend, endpoint, locator } = await startTunnelFrontend({
    domain: DOMAIN,
    directory,
    limits: DEFAULT_TUNNEL_LIMITS,
    logger: createLogger('frontend', { level: 'silent' }),
  }));
  frontendPort = frontend.port;
  tunnel = await connectTunnel();
  ({ access, listener } = await startPrivateAccess(frontendPort, tunnelTransport()));
});

afterAll(async () => {
  await listener?.close();
  await access?.close();
  await tunnel?.close();
  endpoint?.close();
  await frontend?.close();
  for (const socket of holding) socket.destroy();
  backend?.closeAllConnections();
  await new Promise((resolve) => backend?.close(resolve));
  if (injections.length > 0) {
    figures.fault({
      fault: `Body cut short on the tunnel (dropped, backend hung up, upload abandoned; ${tunnelTransport()} transport)`,
      injections: injections.length,
      outcome:
        'each a failure at the other end: the visitor connection cut, the backend request aborted ' +
        '(chunked bodies and uploads used to end as if whole; fixed); whole bodies stayed complete',
      lost: 0,
    });
  }
  figures.write();
});

const publicHost = () => `pub1.${DOMAIN}:${frontendPort}`;

describe('a body cut short through the tunnel', () => {
  it('whole chunked and content-length responses stay complete, public and private', async () => {
    for (const framing of ['chunked', 'length']) {
      const viaPublic = await visit(frontendPort, `/${framing}/whole`, publicHost());
      const viaAccess = await visit(listener.port, `/${framing}/whole`, `127.0.0.1:${listener.port}`);
      for (const seen of [viaPublic, viaAccess]) expect(seen).toEqual({ status: 200, complete: true, body: WHOLE });
    }
  });

  it.each(['chunked', 'length'])('a %s response whose backend hangs up mid-body cuts the visitor', async (framing) => {
    const viaPublic = await visit(frontendPort, `/${framing}/hangup`, publicHost());
    const viaAccess = await visit(listener.port, `/${framing}/hangup`, `127.0.0.1:${listener.port}`);
    injections.push(`hangup ${framing}`, `hangup ${framing} via access`);
    for (const seen of [viaPublic, viaAccess]) {
      expect(seen.status).toBe(200);
      expect(seen.body).toBe(PART.length);
      expect(seen.complete).toBe(false);
    }
  });

  it.each(['chunked', 'length'])('a %s response whose tunnel drops mid-body cuts the visitor', async (framing) => {
    tunnel ??= await connectTunnel();
    const current = tunnel;
    let heads = 0;
    // Both visitors have the first part of their body: the agent's tunnel goes away.
    const started = () => void (++heads === 2 && current.close());
    const [viaPublic, viaAccess] = await Promise.all([
      visit(frontendPort, `/${framing}/hold`, publicHost(), started),
      visit(listener.port, `/${framing}/hold`, `127.0.0.1:${listener.port}`, started),
    ]);
    tunnel = undefined;
    for (const socket of holding) socket.destroy();
    holding.clear();
    injections.push(`tunnel drop ${framing}`, `tunnel drop ${framing} via access`);
    for (const seen of [viaPublic, viaAccess]) {
      expect(seen.status).toBe(200);
      expect(seen.body).toBe(PART.length);
      expect(seen.complete).toBe(false);
    }
  });

  it('an upload the visitor abandons mid-body never reaches the backend as whole', async () => {
    tunnel ??= await connectTunnel();
    const before = uploads.length;
    const startedBefore = uploadsStarted;
    const req = http.request({
      host: '127.0.0.1',
      port: frontendPort,
      path: '/upload',
      method: 'POST',
      agent: false,
      headers: { host: publicHost(), 'transfer-encoding': 'chunked' },
    });
    req.on('error', () => undefined);
    req.write(PART);
    await until(() => uploadsStarted > startedBefore, 'the upload to reach the backend', 5_000, 25);
    // The first part reaches the backend before the visitor goes away.
    await new Promise((r) => setTimeout(r, 200));
    req.destroy();
    await until(() => uploads.length > before, 'the backend to see the upload end', 5_000, 25);
    injections.push('upload abandoned');
    expect(uploads.at(-1)).toEqual({ complete: false, bytes: PART.length });
  });
});
