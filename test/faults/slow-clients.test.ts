import { createServer, request as httpRequest, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FRONTEND_LIMITS } from '../../sidecar/connections.ts';
import { BODY_BUFFER_BYTES, MAX_STREAMED_BODIES_PER_SHARE } from '../../sidecar/upload-gate.ts';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { UNREACHABLE_IDP1, startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { slowClient, type SlowClient } from '../support/raw-socket.ts';
import { until } from '../support/until.ts';

/**
 * Slow and greedy clients against a running frontend. A probe had held 50 connections open for 75 s
 * by sending headers one byte per second; now every way of holding a connection without finishing
 * a request ends at a timeout, one address cannot hold more than its cap, and visitors from other
 * addresses are served throughout. Loopback has all of 127/8, so "other addresses" are real peers.
 */
const figures = suiteFigures('slow-clients');
const provider = UNREACHABLE_IDP1;

let backend: EchoBackend;
beforeAll(async () => {
  backend = await startEchoBackend();
});
afterAll(async () => {
  figures.write();
  await backend?.close();
});

/** One GET to a share from a chosen loopback address; the status, or 0 when the connection failed. */
function visit(fe: TestFrontend, localAddress: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: fe.port, path: '/', localAddress, agent: false, headers: { host: fe.host('open') } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.setTimeout(5_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

describe('each way of holding a connection ends at its timeout', () => {
  const limits = { headersTimeoutMs: 1_500, requestTimeoutMs: 3_000, keepAliveTimeoutMs: 1_000 };
  let fe: TestFrontend;
  beforeAll(async () => {
    fe = await startTestFrontend({
      providers: [provider],
      shares: [{ token: 'open', target: backend.url.href }],
      limits,
    });
  });
  afterAll(() => fe?.close());

  it('a connection that never sends a byte is closed after the headers timeout', async () => {
    const client = slowClient(fe.port, { host: fe.host('open'), intervalMs: 1_000, silent: true });
    const openMs = await client.closed;
    expect(openMs).toBeGreaterThanOrEqual(limits.headersTimeoutMs - 100);
    figures.measure('silent connection closed after (ms, headers timeout 1500)', openMs);
  });

  it('headers sent one byte at a time are answered 408 and closed after the headers timeout', async () => {
    const client = slowClient(fe.port, { host: fe.host('open'), intervalMs: 100 });
    const openMs = await client.closed;
    // Node answers 408 when its own check comes first; otherwise the connection is just closed.
    expect(client.answer()).toMatch(/^(HTTP\/1\.1 408 [^]*)?$/);
    figures.measure('slowloris headers closed after (ms, headers timeout 1500)', openMs);
  });

  it('a body trickled one byte at a time is cut at the request timeout', async () => {
    const started = Date.now();
    const body = 'x'.repeat(1_000);
    const socket = connect(fe.port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.resume();
    socket.write(`POST /upload HTTP/1.1\r\nHost: ${fe.host('open')}\r\nContent-Length: ${body.length}\r\n\r\n`);
    let sent = 0;
    const timer = setInterval(() => socket.writable && socket.write(body[sent++] ?? ''), 100);
    await new Promise((r) => socket.once('close', r));
    clearInterval(timer);
    expect(sent).toBeLessThan(body.length);
    figures.measure('trickled body cut after (ms, request timeout 3000)', Date.now() - started);
  });

  it('an idle kept-alive connection is closed after the keep-alive timeout', async () => {
    const socket = connect(fe.port, '127.0.0.1');
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    socket.write(`GET / HTTP/1.1\r\nHost: ${fe.host('open')}\r\n\r\n`);
    const started = Date.now();
    await new Promise((r) => socket.once('close', r));
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    figures.measure('idle keep-alive connection closed after (ms, keep-alive timeout 1000)', Date.now() - started);
  });
});

describe('slowloris from several addresses with the production limits', () => {
  let fe: TestFrontend;
  beforeAll(async () => {
    fe = await startTestFrontend({ providers: [provider], shares: [{ token: 'open', target: backend.url.href }] });
  });
  afterAll(() => fe?.close());

  it('holds at most the per-address cap, closes every slow connection at the headers timeout, and serves other visitors throughout', async () => {
    const attackers = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
    const perAttacker = DEFAULT_FRONTEND_LIMITS.maxConnectionsPerIp + 100;
    const clients: SlowClient[] = [];
    for (const address of attackers) {
      for (let i = 0; i < perAttacker; i++) {
        // Paced, so the kernel's accept queue (backlog 511) hands every connection to the frontend.
        if (i % 100 === 0) await new Promise((r) => setTimeout(r, 50));
        // Half send one header byte per second, half never send anything.
        clients.push(
          slowClient(fe.port, { host: fe.host('open'), intervalMs: 1_000, localAddress: address, silent: i % 2 === 1 }),
        );
      }
    }
    const visits: Promise<number>[] = [];
    const visitor = setInterval(() => visits.push(visit(fe, '127.0.0.9')), 100);
    const closedMs = await Promise.all(clients.map((c) => c.closed));
    clearInterval(visitor);
    const statuses = await Promise.all(visits);

    const refused = clients.filter((c) => c.answer().startsWith('HTTP/1.1 503')).length;
    const timedOut = clients.length - refused;
    const longest = Math.max(...closedMs);
    expect(timedOut).toBeLessThanOrEqual(attackers.length * DEFAULT_FRONTEND_LIMITS.maxConnectionsPerIp);
    expect(refused).toBeGreaterThanOrEqual(attackers.length * 100);
    expect(statuses.length).toBeGreaterThan(10);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const metrics = await fetch(`http://127.0.0.1:${fe.frontend.metricsPort}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(new RegExp(`svc_frontend_connections_refused_total ${refused}\\b`));

    figures.fault({
      fault: `Slowloris: ${clients.length} slow connections from ${attackers.length} addresses`,
      injections: clients.length,
      outcome: `${timedOut} held then closed by the headers timeout (longest ${Math.round(longest / 1000)} s), ${refused} refused at the per-address cap; ${statuses.length}/${statuses.length} other visitors served`,
      lost: 0,
    });
    figures.measure('slow connections held open at once', timedOut);
    figures.measure('slow connections refused (503) at the per-address cap', refused);
    figures.measure('longest time a slow connection stayed open (ms)', longest);
    figures.measure(
      'other visitors served during the attack',
      `${statuses.filter((s) => s === 200).length}/${statuses.length}`,
    );
  }, 60_000);
});

describe('trickled uploads do not take the backend connections other visitors need', () => {
  /** A backend that answers an upload once it has read the whole body, counting the uploads it holds. */
  let uploads: Server;
  let uploadsUrl: string;
  let holding = 0;
  let mostHeld = 0;
  let fe: TestFrontend;
  beforeAll(async () => {
    uploads = createServer((req, res) => {
      holding += 1;
      mostHeld = Math.max(mostHeld, holding);
      let length = 0;
      req.on('data', (c: Buffer) => (length += c.length));
      req.on('close', () => (holding -= 1));
      req.on('end', () => res.end(`got ${length}`));
    });
    await new Promise<void>((r) => uploads.listen(0, '127.0.0.1', r));
    uploadsUrl = `http://127.0.0.1:${(uploads.address() as AddressInfo).port}`;
    fe = await startTestFrontend({ providers: [provider], shares: [{ token: 'open', target: uploadsUrl }] });
  });
  afterAll(async () => {
    await fe?.close();
    uploads?.closeAllConnections();
    await new Promise((r) => uploads?.close(r));
  });

  /** An upload declaring `length` bytes and sending one byte per second from `localAddress`. */
  function trickle(localAddress: string, length: number): Socket {
    const socket = connect({ port: fe.port, host: '127.0.0.1', localAddress });
    socket.on('error', () => undefined);
    socket.write(`POST /upload HTTP/1.1\r\nHost: ${fe.host('open')}\r\nContent-Length: ${length}\r\n\r\n`);
    const timer = setInterval(() => socket.writable && socket.write('x'), 1_000);
    socket.on('close', () => clearInterval(timer));
    return socket;
  }

  /** A small upload sent at once from another address; its status, 0 when it failed or took over 5 s. */
  function upload(): Promise<number> {
    return new Promise((resolve) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: fe.port,
          method: 'POST',
          path: '/form',
          localAddress: '127.0.0.9',
          agent: false,
          headers: { host: fe.host('open'), 'content-type': 'text/plain' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.setTimeout(5_000, () => req.destroy());
      req.on('error', () => resolve(0));
      req.end('a small form');
    });
  }

  it('bodies arrive whole whichever way they go: read ahead, chunked past the buffer, streamed', async () => {
    const send = (chunks: Buffer[], headers: Record<string, string>): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: fe.port, method: 'POST', path: '/whole', agent: false, headers },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve(text));
          },
        );
        req.on('error', reject);
        for (const chunk of chunks) req.write(chunk);
        req.end();
      });
    const host = fe.host('open');
    const piece = Buffer.alloc(40 * 1024, 'y');
    expect(await send([piece], { host, 'content-length': String(piece.length) })).toBe(`got ${piece.length}`);
    expect(await send([piece, piece, piece], { host, 'transfer-encoding': 'chunked' })).toBe(`got ${3 * piece.length}`);
    const large = Array.from({ length: 8 }, () => piece);
    expect(await send(large, { host, 'content-length': String(8 * piece.length) })).toBe(`got ${8 * piece.length}`);
  });

  it('small trickled bodies are read before the backend is contacted, large ones are bounded per share', async () => {
    const small = 200;
    const large = 80;
    const tricklers: Socket[] = [];
    const addresses = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
    for (let i = 0; i < small + large; i++) {
      if (i % 50 === 0) await new Promise((r) => setTimeout(r, 50));
      tricklers.push(trickle(addresses[i % addresses.length] as string, i < small ? 1_000 : BODY_BUFFER_BYTES * 16));
    }
    await new Promise((r) => setTimeout(r, 2_000));
    const heldByTricklers = mostHeld;
    const statuses: number[] = [];
    for (let round = 0; round < 4; round++) {
      statuses.push(...(await Promise.all([upload(), upload(), visit(fe, '127.0.0.9')])));
    }
    for (const socket of tricklers) socket.destroy();

    expect(heldByTricklers).toBeLessThanOrEqual(MAX_STREAMED_BODIES_PER_SHARE);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    figures.fault({
      fault: `Trickled uploads: ${small} small and ${large} large bodies sent a byte a second to one share`,
      injections: small + large,
      outcome: `the backend held ${heldByTricklers} of them (small ones read whole first; large ones at most ${MAX_STREAMED_BODIES_PER_SHARE} per share); ${statuses.filter((s) => s === 200).length}/${statuses.length} other requests to the share served meanwhile`,
      lost: 0,
    });
    figures.measure('backend connections held by 280 trickled uploads', heldByTricklers);
    figures.measure(
      'other requests served during the trickled uploads',
      `${statuses.filter((s) => s === 200).length}/${statuses.length}`,
    );
  }, 60_000);
});

describe('a streamed body must keep a minimum rate', () => {
  const limits = { bodyRateWindowMs: 1_000, bodyMinBytesPerWindow: 1_024 };
  /** A backend that reads an upload only after `pauseMs` (backpressure), then answers its length. */
  let backendServer: Server;
  let fe: TestFrontend;
  let cutAtBackend = 0;
  beforeAll(async () => {
    backendServer = createServer((req, res) => {
      const pauseMs = req.url === '/slow-reader' ? 3_000 : 0;
      let length = 0;
      req.pause();
      setTimeout(() => {
        req.on('data', (c: Buffer) => (length += c.length));
        req.resume();
      }, pauseMs);
      req.on('aborted', () => (cutAtBackend += 1));
      req.on('end', () => res.end(`got ${length}`));
    });
    await new Promise<void>((r) => backendServer.listen(0, '127.0.0.1', r));
    const target = `http://127.0.0.1:${(backendServer.address() as AddressInfo).port}`;
    fe = await startTestFrontend({ providers: [provider], shares: [{ token: 'open', target }], limits });
  });
  afterAll(async () => {
    await fe?.close();
    backendServer?.closeAllConnections();
    await new Promise((r) => backendServer?.close(r));
  });

  it('a large body trickled below the rate is cut with 408, and its backend request with it', async () => {
    const socket = connect(fe.port, '127.0.0.1');
    socket.on('error', () => undefined);
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
    const started = Date.now();
    socket.write(`POST /upload HTTP/1.1\r\nHost: ${fe.host('open')}\r\nContent-Length: ${1024 * 1024}\r\n\r\n`);
    const timer = setInterval(() => socket.writable && socket.write('x'.repeat(100)), 200);
    await new Promise((r) => socket.once('close', r));
    clearInterval(timer);
    const cutMs = Date.now() - started;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    await until(() => cutAtBackend > 0, 'the backend request cut');
    figures.measure('streamed body at 500 B/s cut after (ms, minimum 1 KiB per 1 s window)', cutMs);
  });

  it('a body the backend is slow to read is not cut', async () => {
    const body = Buffer.alloc(4 * 1024 * 1024, 'z');
    const reply = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: fe.port,
          method: 'POST',
          path: '/slow-reader',
          agent: false,
          headers: { host: fe.host('open'), 'content-length': String(body.length) },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(`${res.statusCode ?? 0} ${text}`));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(reply).toBe(`200 got ${body.length}`);
  });
});
