import { Agent, createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFloorHop, type HttpFloorHop } from './http-floor.ts';

/** A backend that answers with what it was asked: method, path and Host, as `text/x-echo` with status 203. */
let backend: Server;
let backendPort: number;
const closers: (() => void)[] = [];

beforeAll(async () => {
  backend = createServer((req, res) => {
    const body = `${req.method} ${req.url} ${req.headers.host}`;
    res.writeHead(203, { 'content-type': 'text/x-echo', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  backendPort = (backend.address() as AddressInfo).port;
});

afterAll(() => {
  closers.forEach((close) => close());
  backend.closeAllConnections();
  backend.close();
});

async function hop(h: Omit<HttpFloorHop, 'next'>, next: number): Promise<number> {
  const started = await startHttpFloorHop({ ...h, next });
  closers.push(() => started.close());
  return started.port;
}

/** `count` GETs one after another on one kept-alive connection: each reply's status, type, body and socket reuse. */
async function sequentialGets(
  port: number,
  count: number,
): Promise<{ status?: number; type?: string; body: string; reused: boolean }[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const replies = [];
  for (let i = 0; i < count; i += 1) {
    replies.push(
      await new Promise<{ status?: number; type?: string; body: string; reused: boolean }>((resolve, reject) => {
        const req = get(
          { port, host: '127.0.0.1', path: `/echo?n=${i}`, agent, headers: { host: 'share.example' } },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c: string) => (body += c));
            res.on('end', () =>
              resolve({ status: res.statusCode, type: res.headers['content-type'], body, reused: req.reusedSocket }),
            );
          },
        );
        req.on('error', reject);
      }),
    );
  }
  agent.destroy();
  return replies;
}

const expected = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    status: 203,
    type: 'text/x-echo',
    body: `GET /echo?n=${i} share.example`,
    reused: i > 0,
  }));

describe('the plain-Node floors of bench:tunnel', () => {
  it.each(['raw', 'node-http'] as const)(
    'one %s proxy passes method, path, Host, status and type on a kept-alive connection',
    async (inbound) => {
      const port = await hop({ inbound, outbound: 'pool' }, backendPort);
      expect(await sequentialGets(port, 3)).toEqual(expected(3));
    },
  );

  it.each(['raw', 'node-http'] as const)(
    'two processes with HTTP/2 between (%s in front) do the same',
    async (inbound) => {
      const backendSide = await hop({ inbound: 'h2', outbound: 'pool' }, backendPort);
      const port = await hop({ inbound, outbound: 'h2' }, backendSide);
      expect(await sequentialGets(port, 3)).toEqual(expected(3));
    },
  );
});
