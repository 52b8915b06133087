import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runFixedRate, type FixedRateResult } from './fixed-rate.ts';
import { startModule } from './processes.ts';

describe('runFixedRate', () => {
  const servers: (Server | TcpServer)[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      if ('closeAllConnections' in server) server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  const serve = async (handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> => {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/path?q=1`;
  };

  it('sends the rate for the warm-up and the duration with the given headers, and times every reply after the warm-up', async () => {
    const seen: string[] = [];
    const url = await serve((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.host} ${req.headers.cookie}`);
      res.end('hello');
    });
    const result = await runFixedRate({
      url,
      headers: { host: 'share.example.test', cookie: 'svc_session=abc' },
      rate: 400,
      durationSeconds: 1,
      warmupSeconds: 0.5,
      connections: 4,
    });
    expect(result).toMatchObject({ rate: 400, sent: 400, warmupSent: 200, completed: 400, non2xx: 0, errors: 0 });
    expect(seen).toHaveLength(600);
    expect(new Set(seen)).toEqual(new Set(['GET /path?q=1 share.example.test svc_session=abc']));
    expect(result.p50Ms).toBeGreaterThan(0);
    expect(result.p50Ms).toBeLessThanOrEqual(result.p90Ms);
    expect(result.p90Ms).toBeLessThanOrEqual(result.p99Ms);
    expect(result.p99Ms).toBeLessThanOrEqual(result.maxMs);
  });

  it('counts the wait for a busy connection: a slow server cannot hide its queue', async () => {
    // One connection, 20 ms a reply: 50 replies/s against 100 sent; the last request, due at 0.99 s,
    // is answered at about 2 s.
    const url = await serve((_req, res) => setTimeout(() => res.end('slow'), 20));
    const result = await runFixedRate({ url, rate: 100, durationSeconds: 1, warmupSeconds: 0, connections: 1 });
    expect(result.completed).toBe(100);
    expect(result.maxMs).toBeGreaterThan(700);
    expect(result.p50Ms).toBeGreaterThan(200);
  });

  it('counts its own stalls in the timed run: a blocked event loop shows, with its length', async () => {
    const url = await serve((_req, res) => res.end('ok'));
    // The generator runs in this process: 40 ms of busy work half-way through the timed run stalls it.
    const block = setTimeout(() => {
      const until = performance.now() + 40;
      while (performance.now() < until);
    }, 700);
    const result = await runFixedRate({ url, rate: 200, durationSeconds: 1, warmupSeconds: 0.2, connections: 2 });
    clearTimeout(block);
    expect(result.completed).toBe(200);
    expect(result.stalls).toBeGreaterThanOrEqual(1);
    expect(result.longestStallMs).toBeGreaterThanOrEqual(40);
  });

  it('runs at the priority it is given, and says so', async () => {
    const url = await serve((_req, res) => res.end('ok'));
    // In a process of its own, as the benchmarks run it; a higher nice value needs no privilege.
    const child = await startModule<FixedRateResult>(
      'fixed-rate',
      fileURLToPath(new URL('./fixed-rate.ts', import.meta.url)),
      'runFixedRate',
      { url, rate: 100, durationSeconds: 0.3, warmupSeconds: 0, connections: 1, priority: 7 },
    );
    await child.exited;
    expect(child.ready).toMatchObject({ completed: 30, errors: 0, priority: 7 });
  });

  it('reads chunked replies, counts non-2xx, and replaces connections the server closes', async () => {
    let n = 0;
    const url = await serve((_req, res) => {
      n += 1;
      if (n % 3 === 0) {
        res.writeHead(503, { connection: 'close' }).end('busy');
      } else if (n % 3 === 1) {
        res.write('chunked, ');
        res.end('twice');
      } else {
        res.writeHead(200, { 'content-length': '2' }).end('ok');
      }
    });
    const result = await runFixedRate({ url, rate: 300, durationSeconds: 1, warmupSeconds: 0, connections: 3 });
    expect(result).toMatchObject({ sent: 300, completed: 300, non2xx: 100, errors: 0 });
  });

  it('counts a malformed reply as an error, with what was wrong, and goes on', async () => {
    let n = 0;
    const server = createTcpServer((socket) => {
      socket.on('data', () => {
        n += 1;
        socket.write(
          n % 2 === 0
            ? 'HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nxx'
            : 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok',
        );
      });
      socket.on('error', () => undefined);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const result = await runFixedRate({ url, rate: 100, durationSeconds: 1, warmupSeconds: 0, connections: 2 });
    expect(result.sent).toBe(100);
    expect(result.completed + result.errors).toBe(100);
    expect(result.errors).toBeGreaterThan(10);
    expect(result.errorKinds).toEqual(['backend response refused: bad Content-Length']);
  });

  it('reads a reply whose body runs to the end of the connection, then opens another', async () => {
    const server = createTcpServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end'));
      socket.on('error', () => undefined);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const result = await runFixedRate({ url, rate: 100, durationSeconds: 1, warmupSeconds: 0, connections: 2 });
    expect(result).toMatchObject({ sent: 100, completed: 100, non2xx: 0, errors: 0 });
  });

  it('closes every connection when the run ends, replacements still waiting for a reply included', async () => {
    // Each connection's first request is answered with a close; the replacements are never answered,
    // so the run ends on its reply deadline with requests outstanding on connections opened mid-run.
    const open = new Set<Socket>();
    let answered = 0;
    const server = createTcpServer((socket) => {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => undefined);
      socket.once('data', () => {
        if (answered >= 2) return;
        answered += 1;
        socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok');
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const result = await runFixedRate({
      url,
      rate: 20,
      durationSeconds: 1,
      warmupSeconds: 0,
      connections: 2,
      replyTimeoutMs: 500,
    });
    expect(result.completed).toBe(2);
    expect(result.errorKinds).toContain('no reply within 0.5 s');
    try {
      // Closed by the generator, not by the server: a socket left open keeps a generator process alive.
      await expect.poll(() => open.size, { timeout: 5_000 }).toBe(0);
    } finally {
      for (const socket of open) socket.destroy();
    }
  });

  it('refuses a target it cannot speak to', async () => {
    await expect(
      runFixedRate({ url: 'https://127.0.0.1:1/', rate: 1, durationSeconds: 1, connections: 1 }),
    ).rejects.toThrow('only http:// targets');
  });
});
