/**
 * `node bench/share-traffic.ts` — what the console's per-share counters (lib/share/traffic.ts) cost
 * a tunnelled request, in one run: a loopback HTTP server answering a small body, loaded with
 * autocannon (keep-alive, 10 connections) with `ShareTraffic.track` on every request and without,
 * alternating rounds; plus the bare `record` call in a tight loop.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from '../lib/node-http.ts';
import { ShareTraffic } from '../lib/share/traffic.ts';

type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
}) => Promise<{ requests: { average: number } }>;
// By name in a variable: autocannon ships no types, this is its whole surface here.
const AUTOCANNON = 'autocannon';
const autocannon = ((await import(AUTOCANNON)) as { default: Autocannon }).default;

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SECONDS = Number(process.env.SECONDS ?? 3);

async function serve(count: boolean): Promise<number> {
  const traffic = new ShareTraffic();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (count) traffic.track('abcdefabcdef', req, res);
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const result = await autocannon({ url: `http://127.0.0.1:${port}/`, connections: 10, duration: SECONDS });
  server.closeAllConnections();
  server.close();
  return result.requests.average;
}

function recordNs(): number {
  const traffic = new ShareTraffic();
  const n = 2_000_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) traffic.record('abcdefabcdef', (i & 63) === 0, 120, 480);
  return Number(process.hrtime.bigint() - started) / n;
}

function trackNs(): number {
  const traffic = new ShareTraffic();
  const socket = { bytesRead: 0, bytesWritten: 0 };
  const n = 500_000;
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const res = Object.assign(new EventEmitter(), { writableFinished: true, statusCode: 200 });
    traffic.track('abcdefabcdef', { socket } as unknown as IncomingMessage, res as unknown as ServerResponse);
    res.emit('close');
  }
  return Number(process.hrtime.bigint() - started) / n;
}

const off: number[] = [];
const on: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  off.push(await serve(false));
  on.push(await serve(true));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const [a, b] = [median(off), median(on)];
process.stdout.write(
  [
    `requests/s, counters off: ${off.map(Math.round).join(', ')} (median ${Math.round(a)})`,
    `requests/s, counters on:  ${on.map(Math.round).join(', ')} (median ${Math.round(b)})`,
    `on/off: ${(b / a).toFixed(3)}; per request ${(1e6 / b - 1e6 / a).toFixed(2)} µs`,
    `record(): ${recordNs().toFixed(1)} ns; track() + close: ${trackNs().toFixed(1)} ns (includes a fake response)`,
    '',
  ].join('\n'),
);
