import { readFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningAccessClient } from '../../agent/tunnel/access-client.ts';
import type { RunningListener } from '../../agent/backends/listener.ts';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { startTunnel, type RunningTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import { DEFAULT_TUNNEL_LIMITS, STREAM_WINDOW_BYTES, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import type { RunningFrontend } from '../../sidecar/frontend.ts';
import type { TunnelEndpoint } from '../../sidecar/tunnel/endpoint.ts';
import type { LocalTunnels } from '../../sidecar/tunnel/locator.ts';
import {
  startPrivateAccess,
  startTunnelFrontend,
  TWO_MACHINES,
  twoMachineDirectory,
} from '../support/tunnel-frontend.ts';
import { tunnelTransport } from '../support/tunnel-transport.ts';
import { until } from '../support/until.ts';

/**
 * A visitor who stops reading a download must stop the backend: between them only the tunnel
 * stream's window and the sockets' kernel buffers may hold bytes, never a whole body. Real frontend,
 * tunnel and access clients on loopback; a backend that writes a 64 MiB body only as fast as its
 * socket takes it ('drain'), and a visitor that reads the response head and then stops reading.
 * In-flight = what the backend wrote minus what the visitor read, once the backend's count stops.
 */
const DOMAIN = 'backpressure.localhost';
const CHUNK = Buffer.alloc(64 * 1024, 'b');
const SETTLE_MS = 3_000;
/**
 * What the kernel may hold besides the stream window (measured with `ss -tm` on loopback): on each
 * plain TCP hop, backend to agent and frontend to visitor, the sender's buffer autotunes up to
 * `tcp_wmem`'s maximum (4 MiB by default; 3.8-4.2 MB seen) and the receiver's holds up to ~1.3 MB
 * (allowed 2 MiB). The tunnel's own connection carries at most the stream window. Beyond that
 * nothing may buffer: a body larger than all of it must stop at the bound, not go through whole.
 */
const KERNEL_BYTES_PER_HOP = maxSendBuffer() + 2 * 1024 * 1024;
const BOUND = STREAM_WINDOW_BYTES + 2 * KERNEL_BYTES_PER_HOP;
/** A private access crosses two HTTP/2 connections (access, then tunnel): a stream window on each. */
const ACCESS_BOUND = BOUND + STREAM_WINDOW_BYTES;
const BODY_BYTES = 64 * 1024 * 1024;

function maxSendBuffer(): number {
  const [, , max] = readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/);
  return Number(max);
}

/** Bytes the backend managed to write per request path. */
const written = new Map<string, number>();
let backend: http.Server;
let backendUrl: string;
let frontend: RunningFrontend;
let endpoint: TunnelEndpoint;
let locator: LocalTunnels;
let tunnel: RunningTunnel;
let access: RunningAccessClient;
let listener: RunningListener;

function startBackend(): Promise<string> {
  backend = http.createServer((req, res) => {
    const path = req.url ?? '';
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BODY_BYTES });
    let sent = 0;
    written.set(path, 0);
    const pump = (): void => {
      while (sent < BODY_BYTES) {
        const chunk = CHUNK.subarray(0, Math.min(CHUNK.length, BODY_BYTES - sent));
        sent += chunk.length;
        written.set(path, sent);
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  return new Promise((resolve) =>
    backend.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(backend.address() as AddressInfo).port}`)),
  );
}

interface StalledVisitor {
  /** Body bytes the visitor read (those that arrived with the head). */
  readonly read: number;
  readonly socket: net.Socket;
}

/** A GET on a raw socket that reads the response head (and what came with it), then stops reading. */
function stalledVisitor(port: number, path: string, host: string): Promise<StalledVisitor> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`),
    );
    let received = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.pause();
      socket.removeAllListeners('data');
      if (!received.subarray(0, end).toString('latin1').startsWith('HTTP/1.1 200')) {
        reject(new Error(`unexpected response: ${received.subarray(0, end).toString('latin1')}`));
      }
      resolve({ read: received.length - end - 4, socket });
    });
  });
}

/** The bytes the backend wrote that the visitor did not read, once nothing moves any more. */
async function inFlight(port: number, path: string, host: string): Promise<number> {
  const visitor = await stalledVisitor(port, path, host);
  let last = -1;
  // Settled: the backend's count stopped moving for SETTLE_MS (or it wrote everything).
  for (;;) {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const now = written.get(path) ?? 0;
    if (now === last || now === BODY_BYTES) break;
    last = now;
  }
  const bytes = (written.get(path) ?? 0) - visitor.read;
  visitor.socket.destroy();
  return bytes;
}

beforeAll(async () => {
  backendUrl = await startBackend();
  ({ frontend, endpoint, locator } = await startTunnelFrontend({
    domain: DOMAIN,
    directory: twoMachineDirectory(),
    limits: DEFAULT_TUNNEL_LIMITS,
    logger: createLogger('frontend', { level: 'silent' }),
  }));
  const shares = new Map<string, TunnelledShare>([
    ['pub1', { shareMode: 'public', backendUrl: new URL(backendUrl) }],
    ['priv1', { shareMode: 'private', backendUrl: new URL(backendUrl) }],
  ]);
  tunnel = startTunnel({
    transport: tunnelTransport(),
    url: tunnelUrl(`http://127.0.0.1:${frontend.port}`, TUNNEL_PATH),
    token: TWO_MACHINES.owner,
    logger: createLogger('agent', { level: 'silent' }),
    resolve: (t) => shares.get(t),
  });
  await until(() => tunnel.connected && locator.find('aaaaaaaaaaaa') !== undefined, 'the tunnel', 10_000, 25);
  ({ access, listener } = await startPrivateAccess(frontend.port, tunnelTransport()));
});

afterAll(async () => {
  await listener?.close();
  await access?.close();
  await tunnel?.close();
  endpoint?.close();
  await frontend?.close();
  backend?.closeAllConnections();
  await new Promise((resolve) => backend?.close(resolve));
});

describe('a visitor who stops reading', () => {
  it('holds back a public share download: at most the stream window and kernel buffers in flight', async () => {
    const bytes = await inFlight(frontend.port, '/public', `pub1.${DOMAIN}:${frontend.port}`);
    console.info(`in flight, public share (${tunnelTransport()}): ${bytes} bytes (bound ${BOUND})`);
    expect(bytes).toBeLessThanOrEqual(BOUND);
  });

  it('holds back a private access download the same way', async () => {
    const bytes = await inFlight(listener.port, '/private', `127.0.0.1:${listener.port}`);
    console.info(`in flight, private access (${tunnelTransport()}): ${bytes} bytes (bound ${ACCESS_BOUND})`);
    expect(bytes).toBeLessThanOrEqual(ACCESS_BOUND);
  });
});
