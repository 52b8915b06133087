import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { createCa, issueCert, type CertFiles } from '../k8s/pki.ts';
import { UNREACHABLE_IDP1, startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { get } from '../support/http.ts';

/**
 * Share targets behind TLS (`https://…`, e.g. a Kubernetes Service that serves TLS): the frontend
 * speaks TLS to them on the URL's port (443 when none), verifies the certificate against the
 * process's CA store with the target's host name, keeps the connections alive, and refuses a
 * backend whose certificate it cannot verify. Before, such a target got plain HTTP on port 80.
 */
interface TlsBackend {
  readonly server: Server;
  readonly port: number;
  /** Each TLS connection's SNI name, in order. */
  readonly connections: (string | false | null)[];
  readonly seen: { url: string; host: string; body: string }[];
}

async function startTlsBackend(cert: CertFiles): Promise<TlsBackend> {
  const connections: (string | false | null)[] = [];
  const seen: TlsBackend['seen'] = [];
  const server = createServer({ cert: readFileSync(cert.cert), key: readFileSync(cert.key) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ url: req.url ?? '', host: req.headers.host ?? '', body });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`tls:${(req.socket as TLSSocket).encrypted === true}:${req.url ?? ''}:${body}`);
    });
  });
  server.on('secureConnection', (socket: TLSSocket) => connections.push(socket.servername));
  const wss = new WebSocketServer({ server });
  wss.on('connection', (socket) => socket.on('message', (data: Buffer) => socket.send(`wss:${data.toString('utf8')}`)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, connections, seen };
}

let dir: string;
let trusted: TlsBackend;
let untrusted: TlsBackend;
let fe: TestFrontend;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'svc-https-backend-'));
  const [ca, otherCa] = await Promise.all([createCa(dir, 'ca'), createCa(dir, 'other-ca')]);
  const leaf = { commonName: 'localhost', altNames: ['DNS:localhost'], usage: 'server' as const };
  const [cert, otherCert] = await Promise.all([
    issueCert(dir, ca, { ...leaf, name: 'backend' }),
    issueCert(dir, otherCa, { ...leaf, name: 'other-backend' }),
  ]);
  // This test process trusts `ca` as a pod would through NODE_EXTRA_CA_CERTS; `other-ca` stays unknown.
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), readFileSync(ca.cert, 'utf8')]);
  [trusted, untrusted] = await Promise.all([startTlsBackend(cert), startTlsBackend(otherCert)]);
  fe = await startTestFrontend({
    providers: [UNREACHABLE_IDP1],
    shares: [
      { token: 'tls', target: `https://localhost:${trusted.port}/app/` },
      { token: 'untrusted', target: `https://localhost:${untrusted.port}` },
    ],
  });
}, 60_000);

afterAll(async () => {
  await fe?.close();
  for (const backend of [trusted, untrusted]) {
    backend?.server.closeAllConnections();
    backend?.server.close();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('https share targets', () => {
  it('are reached over verified TLS with the target host as SNI and Host, on kept-alive connections', async () => {
    const first = await get(fe.port, fe.host('tls'), '/page?q=1');
    const second = await get(fe.port, fe.host('tls'), '/form', {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'content-length': '5' },
      body: 'hello',
    });
    expect(first.status).toBe(200);
    expect(first.body).toBe('tls:true:/app/page?q=1:');
    expect(second.status).toBe(200);
    expect(second.body).toBe('tls:true:/app/form:hello');
    expect(trusted.seen.map((s) => s.host)).toEqual([`localhost:${trusted.port}`, `localhost:${trusted.port}`]);
    expect(trusted.connections).toEqual(['localhost']);
  });

  it('refuse a backend whose certificate does not verify: 502, and no request reaches it', async () => {
    const reply = await get(fe.port, fe.host('untrusted'), '/');
    expect(reply.status).toBe(502);
    expect(untrusted.seen).toEqual([]);
    expect(fe.logs.text).toMatch(/certificate/i);
  });

  it('carry WebSocket upgrades to a wss:// backend', async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${fe.port}/live`, { headers: { host: fe.host('tls') } });
    const echoed = await new Promise<string>((resolve, reject) => {
      socket.once('open', () => socket.send('ping'));
      socket.once('message', (data: Buffer) => resolve(data.toString('utf8')));
      socket.once('error', reject);
    });
    socket.close();
    expect(echoed).toBe('wss:ping');
  });
});
