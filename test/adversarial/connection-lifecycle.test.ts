import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteFigures } from '../support/figures.ts';
import { UNREACHABLE_IDP1, startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { ok, startScriptedBackend, type ScriptedBackend, type ScriptedRequest } from '../support/scripted-backend.ts';
import { until } from '../support/until.ts';

/**
 * How a visitor's connection ends, and what it holds meanwhile, against a backend that answers
 * what it likes (a refused or accepted upgrade, a 101 nobody asked for, a 20 KB head, nothing at
 * all), with visitors on raw sockets that pipeline, split their heads, hang up and reset. Each
 * connection holds one slot of its address's cap (sidecar/connections.ts): every way a connection
 * ends must give it back, or an address is locked out for good; and a request its visitor
 * abandoned must free its backend connection at once.
 */
const figures = suiteFigures('connection-lifecycle');

const SWITCH = 'HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n';

function script(request: ScriptedRequest): { bytes?: string; delayMs?: number; close?: boolean; echo?: boolean } {
  const path = request.path;
  if (path.startsWith('/refuse-upgrade-now')) return { bytes: ok('no upgrade here') };
  if (path.startsWith('/refuse-upgrade')) return { bytes: ok('no upgrade here'), delayMs: 30 };
  if (path.startsWith('/accept-upgrade-close')) return { bytes: SWITCH, close: true };
  if (path.startsWith('/accept-upgrade') || path.startsWith('/unasked-101')) return { bytes: SWITCH, echo: true };
  if (path.startsWith('/head-12k')) return { bytes: ok('big', `x-big: ${'b'.repeat(12_000)}\r\n`) };
  if (path.startsWith('/head-20k')) return { bytes: ok('big', `x-big: ${'b'.repeat(20_000)}\r\n`) };
  if (path.startsWith('/never')) return {};
  const delayMs = request.method === 'POST' ? 200 : 0;
  return { bytes: ok(`${request.method} ${path} ${request.body.length}`), delayMs };
}

const upgrade = (host: string, path: string): string =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
  'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
const get = (host: string, path: string): string => `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
const post = (host: string, path: string, body = 'x'): string =>
  `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A visitor on a raw socket from a chosen loopback address. */
interface Visitor {
  readonly socket: Socket;
  text(): string;
  readonly closed: Promise<void>;
  /** Resolves once the text received matches `pattern`. */
  waitFor(pattern: RegExp, ms?: number): Promise<unknown>;
  /** The statuses received so far. */
  statuses(): number[];
}

function visitor(port: number, localAddress: string): Visitor {
  const socket = connect({ port, host: '127.0.0.1', localAddress, noDelay: true });
  let text = '';
  socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  return {
    socket,
    text: () => text,
    closed,
    waitFor: (pattern, ms = 5_000) =>
      until(() => pattern.test(text), `${String(pattern)} in ${text.slice(0, 120)}`, ms, 5),
    statuses: () => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])),
  };
}

const LIMITS = { backendTimeoutMs: 1_500, headersTimeoutMs: 1_000, maxConnectionsPerIp: 16 };
let backend: ScriptedBackend;
let fe: TestFrontend;
let host: string;

beforeAll(async () => {
  backend = await startScriptedBackend(script);
  fe = await startTestFrontend({
    providers: [UNREACHABLE_IDP1],
    shares: [{ token: 'open', target: backend.url.href }],
    limits: LIMITS,
  });
  host = fe.host('open');
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  await backend?.close();
});

/** Slots `address` still holds once its connections had `ms` to close (a leak when above 0). */
async function slotsLeft(address: string, ms = 2_000): Promise<number> {
  const deadline = Date.now() + ms;
  while (fe.frontend.openConnections(address) > 0 && Date.now() < deadline) await sleep(10);
  return fe.frontend.openConnections(address);
}

/**
 * One visitor's exchange: each step sends its bytes, then waits for the answer to match (or 10 ms
 * without a pattern); then the visitor ends its side (the default), resets, or waits for the
 * frontend to close.
 */
interface Ending {
  readonly steps: readonly (readonly [send: () => string, answer?: RegExp])[];
  readonly finish?: 'end' | 'reset' | 'wait';
}

async function converse(address: string, ending: Ending): Promise<void> {
  const v = visitor(fe.port, address);
  for (const [send, answer] of ending.steps) {
    v.socket.write(send());
    if (answer) await v.waitFor(answer);
    else await sleep(10);
  }
  if (ending.finish === 'reset') v.socket.resetAndDestroy();
  else if (ending.finish !== 'wait') v.socket.end();
  await v.closed;
}

let nextAddress = 20;
const freshAddress = (): string => `127.0.2.${nextAddress++}`;

describe('every way a connection ends gives its slot back (cap lowered to 16 per address)', () => {
  const tally = figures.attackClass(
    'Connection slots kept after the connection ended (per-address lock-out)',
    'an upgrade the backend refused, with the next request sent behind it, never closed its socket: one slot of the address leaked per try, and after 512 every connection from the address (/healthz included) was answered 503',
  );
  const endings: [string, Ending][] = [
    ['a fast-path request, then the visitor closes', { steps: [[() => get(host, '/plain'), /GET \/plain 0/]] }],
    [
      'a fast-path request, then the visitor resets (RST)',
      { steps: [[() => get(host, '/plain'), /GET \/plain 0/]], finish: 'reset' },
    ],
    [
      'handed over to Node’s server (a POST), then the visitor closes',
      { steps: [[() => get(host, '/first') + post(host, '/upload'), /POST \/upload 1/]] },
    ],
    [
      'an upgrade the backend refuses after 30 ms, the next request sent behind it',
      { steps: [[() => upgrade(host, '/refuse-upgrade')], [() => get(host, '/next'), /no upgrade here/]] },
    ],
    [
      'an upgrade the backend refuses at once, the next request sent behind it',
      { steps: [[() => upgrade(host, '/refuse-upgrade-now'), /no upgrade here/], [() => get(host, '/next')]] },
    ],
    [
      'an upgrade refused by the frontend (unknown share), the next request sent behind it',
      { steps: [[() => upgrade(fe.host('nosuchshare'), '/ws'), /404/], [() => get(host, '/next')]] },
    ],
    [
      'an upgrade accepted, then closed by the visitor',
      {
        steps: [
          [() => upgrade(host, '/accept-upgrade'), /101/],
          [() => 'ping', /ping/],
        ],
      },
    ],
    [
      'an upgrade accepted, then closed by the backend',
      { steps: [[() => upgrade(host, '/accept-upgrade-close')]], finish: 'wait' },
    ],
    [
      'the headers timeout (a head never finished)',
      { steps: [[() => `GET / HTTP/1.1\r\nHost: ${host}\r\n`]], finish: 'wait' },
    ],
    ['the backend timeout (504), then the visitor closes', { steps: [[() => get(host, '/never'), /504/]] }],
  ];

  it.each(endings)('%s', (_name, ending) =>
    tally.run(async () => {
      const address = freshAddress();
      // More connections than the address has slots, four at a time: a leak of one per
      // connection would lock the address out.
      for (let batch = 0; batch < (LIMITS.maxConnectionsPerIp + 4) / 4; batch++)
        await Promise.all([1, 2, 3, 4].map(() => converse(address, ending)));
      expect(await slotsLeft(address)).toBe(0);
      const health = visitor(fe.port, address);
      health.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      await health.closed;
      expect(health.statuses()).toEqual([200]);
    }),
  );
});

describe('a request its visitor abandons frees its backend connection at once', () => {
  const tally = figures.attackClass(
    'Backend connections held for visitors who left',
    'on the fast path, a visitor who ended its side before the answer kept its slot and its pooled backend connection until the backend answered (up to the backend timeout); an upgrade awaiting its answer likewise',
  );
  const abandonments: [string, (v: Visitor, path: string) => void][] = [
    ['fast path, the visitor ends its side (FIN)', (v, path) => v.socket.write(get(host, path))],
    [
      'fast path, a request pipelined behind, the visitor ends its side',
      (v, path) => v.socket.write(get(host, path) + get(host, '/after')),
    ],
    ['Node’s path (a POST), the visitor ends its side', (v, path) => v.socket.write(post(host, path))],
    ['an upgrade awaiting its answer, the visitor ends its side', (v, path) => v.socket.write(upgrade(host, path))],
  ];

  it.each(abandonments)('%s', (name, send) =>
    tally.run(async () => {
      const address = freshAddress();
      const path = `/never-${address}`;
      const v = visitor(fe.port, address);
      send(v, path);
      await until(() => backend.seen.some((r) => r.path === path), 'the request at the backend');
      const left = Date.now();
      v.socket.end();
      // Well under the backend timeout (1.5 s here): the visitor's end is enough.
      await until(() => backend.events.includes(`dropped ${path}`), 'the backend connection closed', 1_000, 5);
      figures.measure(`backend connection freed after the visitor left (ms): ${name}`, Date.now() - left);
      expect(await slotsLeft(address, 1_000)).toBe(0);
    }),
  );
});

describe('the fast path and its hand-over to Node’s server', () => {
  const tally = figures.attackClass(
    'Fast path and hand-over: split heads, unasked 101, pipelining order, large response heads',
    'Node’s path left a 101 to a request that asked for no upgrade unanswered (the fast path answers 502); pipelined GET, POST, GET reached the backend as GET, GET, POST; a 20 KB response head was relayed by the fast path and refused by Node’s',
  );

  it('a POST whose head arrives in two segments after a fast-path request is served', () =>
    tally.run(async () => {
      for (const cut of [100, 3_000, -1, -3]) {
        const v = visitor(fe.port, freshAddress());
        v.socket.write(get(host, '/first'));
        await v.waitFor(/GET \/first 0/);
        const head = `POST /second HTTP/1.1\r\nHost: ${host}\r\nCookie: a=${'c'.repeat(6_000)}; b=${'d'.repeat(4_000)}\r\nContent-Length: 5\r\n\r\n`;
        const at = cut > 0 ? cut : head.length + cut;
        v.socket.write(head.slice(0, at));
        await sleep(20);
        v.socket.write(`${head.slice(at)}hello`);
        await v.waitFor(/POST \/second 5/);
        expect(v.statuses()).toEqual([200, 200]);
        v.socket.destroy();
      }
    }));

  it('a 101 to a request that asked for no upgrade is a 502 at once on both paths', () =>
    tally.run(async () => {
      for (const request of [get(host, '/unasked-101'), post(host, '/unasked-101')]) {
        const v = visitor(fe.port, freshAddress());
        const started = Date.now();
        v.socket.write(request);
        await v.waitFor(/HTTP\/1\.1 \d{3}/, LIMITS.backendTimeoutMs - 500);
        expect(v.statuses()).toEqual([502]);
        figures.measure(`unasked 101 answered after (ms): ${request.split(' ')[0] as string}`, Date.now() - started);
        v.socket.destroy();
      }
    }));

  it('pipelined GET, POST, GET reach the backend in order, the GET only after the POST was answered', () =>
    tally.run(async () => {
      const v = visitor(fe.port, freshAddress());
      const from = backend.events.length;
      v.socket.write(get(host, '/p1') + post(host, '/p2') + get(host, '/p3'));
      await v.waitFor(/GET \/p3 0/);
      expect(v.statuses()).toEqual([200, 200, 200]);
      expect(backend.events.slice(from)).toEqual([
        'seen GET /p1',
        'answered /p1',
        'seen POST /p2',
        'answered /p2',
        'seen GET /p3',
        'answered /p3',
      ]);
      v.socket.destroy();
    }));

  it('one response-head limit for both paths: 12 KB relayed by both, 20 KB refused (502) by both', () =>
    tally.run(async () => {
      const answers: Record<string, number[]> = {};
      for (const path of ['/head-12k', '/head-20k']) {
        for (const request of [get(host, path), post(host, path)]) {
          const v = visitor(fe.port, freshAddress());
          v.socket.write(request);
          await v.waitFor(/HTTP\/1\.1 \d{3}[^]*\r\n\r\n/);
          (answers[path] ??= []).push(v.statuses()[0] as number);
          v.socket.destroy();
        }
      }
      expect(answers).toEqual({ '/head-12k': [200, 200], '/head-20k': [502, 502] });
    }));
});
