import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { spawnListening } from './tunnel-backend.ts';

/**
 * A TCP echo server: every byte a client sends comes back, and the client's FIN is answered with a
 * FIN once everything was echoed (half-close both ways). Run as a script (`node
 * test/support/tcp-echo.ts <host> <port>`) it prints `listening <port>`, so a test can start it in
 * a network namespace.
 */
export async function startTcpEcho(host = '127.0.0.1', port = 0): Promise<{ port: number; close(): void }> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    socket.on('error', () => undefined);
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}

/** The echo server in a process of its own; `wrap` runs it through another command (a namespace). */
export async function spawnTcpEcho(wrap: (argv: string[]) => string[]): Promise<{ child: ChildProcess; port: number }> {
  return spawnListening(import.meta.filename, 'the TCP echo server', wrap);
}

/** What one connection through an echo carried: bytes sent and received, and their SHA-256. */
export interface EchoRun {
  readonly sent: number;
  readonly received: number;
  readonly sentHash: string;
  readonly receivedHash: string;
  /** How the connection ended: `end` (a FIN after the echo) or the error code. */
  readonly ending: string;
}

/**
 * Sends `bytes` of random data to an echo at `host:port` (respecting backpressure), half-closes,
 * and reads until the echo's FIN. Resolves with what went each way.
 */
export function echoRun(host: string, port: number, bytes: number): Promise<EchoRun> {
  return new Promise((resolve) => {
    const socket: Socket = connect({ host, port, allowHalfOpen: true });
    const sentHash = createHash('sha256');
    const receivedHash = createHash('sha256');
    let sent = 0;
    let received = 0;
    const pump = (): void => {
      while (sent < bytes) {
        const chunk = randomBytes(Math.min(64 * 1024, bytes - sent));
        sent += chunk.length;
        sentHash.update(chunk);
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
      socket.end();
    };
    socket.once('connect', pump);
    socket.on('data', (c: Buffer) => {
      received += c.length;
      receivedHash.update(c);
    });
    let settled = false;
    const done = (ending: string) => {
      if (settled) return;
      settled = true;
      resolve({ sent, received, sentHash: sentHash.digest('hex'), receivedHash: receivedHash.digest('hex'), ending });
    };
    socket.once('close', () => done('close'));
    socket.once('end', () => done('end'));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  const echo = await startTcpEcho(process.argv[2] ?? '127.0.0.1', Number(process.argv[3] ?? '0'));
  process.stdout.write(`listening ${echo.port}\n`);
}
