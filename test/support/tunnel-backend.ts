import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { WebSocket, WebSocketServer } from 'ws';

export interface BackendRecord {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

export interface TunnelTestBackend {
  readonly port: number;
  readonly url: string;
  readonly seen: BackendRecord[];
  /** Answers every request waiting on `/hold`. */
  release(): void;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/**
 * A real backend for the tunnel tests. `/echo` answers with the request's method, URL, headers and
 * body length as JSON; `/big?mb=N` streams N MiB; `/hold` answers only when released (an in-flight
 * request); `/ws` echoes websocket messages prefixed with `echo:` and the identity email it saw.
 * Run as a script (`node test/support/tunnel-backend.ts <host> <port>`) it prints `listening <port>`,
 * so a test can start it inside a network namespace.
 */
export async function startTunnelBackend(host = '127.0.0.1', port = 0): Promise<TunnelTestBackend> {
  const seen: BackendRecord[] = [];
  const held = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://backend');
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (url.pathname === '/big') {
      let left = Number(url.searchParams.get('mb') ?? '1') * 16;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': left * CHUNK.length });
      const pump = () => {
        while (left > 0) {
          left--;
          if (!res.write(CHUNK)) return void res.once('drain', pump);
        }
        res.end();
      };
      return pump();
    }
    if (url.pathname === '/hold') {
      const answer = () => res.end('released\n');
      held.add(answer);
      res.on('close', () => held.delete(answer));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      return;
    }
    let length = 0;
    req.on('data', (c: Buffer) => (length += c.length));
    req.on('end', () => {
      const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers, bodyLength: length });
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'backend-cookie=1; Path=/' });
      res.end(body);
    });
  });
  const wss = new WebSocketServer({ server, path: '/ws' });
  wss.on('connection', (socket, req) => {
    seen.push({ method: 'UPGRADE', url: req.url ?? '', headers: req.headers });
    socket.on('message', (data: Buffer) =>
      socket.send(`echo:${data.toString('utf8')}:${String(req.headers['svc-auth-email'] ?? '')}`),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://${host}:${bound}`,
    seen,
    release: () => {
      for (const answer of held) answer();
      held.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The same backend in a process of its own, for tests whose every piece is a process; `wrap` runs it
 * through another command (a network namespace: `(argv) => lab.exec('laptop', argv)`). Resolves
 * with its port.
 */
export async function spawnTunnelBackend(
  wrap: (argv: string[]) => string[] = (argv) => argv,
): Promise<{ child: ChildProcess; port: number }> {
  return spawnListening(import.meta.filename, 'the tunnel backend', wrap);
}

/**
 * Runs a test server script (`node <script> 127.0.0.1 0`, through `wrap`) and resolves with the
 * port it prints as `listening <port>`.
 */
export async function spawnListening(
  script: string,
  label: string,
  wrap: (argv: string[]) => string[],
): Promise<{ child: ChildProcess; port: number }> {
  const node = join(import.meta.dirname, '../../node_modules/.bin/node');
  const [command, ...argv] = wrap([node, script, '127.0.0.1', '0']) as [string, ...string[]];
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (c: Buffer) => {
      const m = /listening (\d+)/.exec(c.toString());
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`${label} exited (${code}) before listening`)));
  });
  return { child, port };
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const backend = await startTunnelBackend(process.argv[2] ?? '127.0.0.1', Number(process.argv[3] ?? '0'));
  process.stdout.write(`listening ${backend.port}\n`);
}

/**
 * Opens a WebSocket to `ws://127.0.0.1:<port>/ws` with `host` as the Host header (a share host),
 * sends `message` and resolves with the first message that comes back, then closes.
 */
export async function websocketRoundTrip(port: number, host: string, message: string): Promise<string> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { host } });
  try {
    return await new Promise<string>((resolve, reject) => {
      socket.on('open', () => socket.send(message));
      socket.on('message', (data: Buffer) => resolve(data.toString()));
      socket.on('error', reject);
    });
  } finally {
    socket.close();
  }
}
