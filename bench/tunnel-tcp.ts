/**
 * `npm run bench:tunnel-tcp` — what a private TCP share costs against the same TCP server reached
 * directly, in one run:
 *
 *   direct     the servers below, on 127.0.0.1
 *   tunnel     an installation (`svc controller --config`), a sharing agent (`svc serve`, `svc share
 *              private --backend-mode tcp`) and an accessing agent (`svc serve`, `svc access private
 *              <token>`), both enabled on one account; each connection to the access's listener is
 *              one HTTP/2 stream to the installation, relayed into the sharing agent's tunnel
 *   floors     the same servers through plain Node relay processes (bench/lib/tcp-floor.ts), none of
 *              svc's code: three TCP relays; one HTTP/2 stream between two processes; three relays
 *              with HTTP/2 between them (the tunnel's shape). What the floors lose against direct is
 *              Node's; what the tunnel loses against the last floor is ours.
 *
 * Measured: throughput of a bulk transfer each way on one connection (a source that sends N MiB and
 * closes; a sink that counts and answers the count at the client's FIN), and connection set-up time
 * (connect, one byte out, its echo back) over sequential fresh connections. Results go to stdout and
 * docs/benchmarks/tunnel-tcp.md.
 *
 *   npm run bench:tunnel-tcp -- [--mib 100] [--rounds 3] [--connections 200] [--cpu-prof DIR]
 *                               [--node-flags '<flags>']
 *
 * `--cpu-prof DIR` writes a V8 CPU profile of every svc process and floor hop into DIR.
 * `--node-flags` adds Node flags to the svc processes (not the floors), e.g.
 * `--heap-growing-percent=0` for V8's own heap sizing instead of bin/node-flags.js's.
 */
import { createServer, connect, type AddressInfo, type Server } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { intArg } from './lib/load-args.ts';
import { cpuSeconds, installCleanup, removeScratchDir, scratchDir, startModule, stopAll } from './lib/processes.ts';
import type { FloorHop, startFloorHop } from './lib/tcp-floor.ts';
import { fixed, machineLines, markdownTable, median, ratio, writeMarkdown } from './lib/report.ts';
import { enableAgents, startSvcInstallation, startSvcServe, svcCommand } from './lib/svc.ts';

const REPORT = fileURLToPath(new URL('../docs/benchmarks/tunnel-tcp.md', import.meta.url));
const CHUNK = Buffer.alloc(256 * 1024, 7);

/** The three test servers: source (sends `mib` MiB), sink (counts), echo. Ports in that order. */
async function startServers(mib: number): Promise<{ ports: number[]; close(): void }> {
  const source = createServer((s) => {
    s.on('error', () => undefined);
    let left = (mib * 2 ** 20) / CHUNK.length;
    const pump = () => {
      while (left > 0) {
        left--;
        if (!s.write(CHUNK)) return void s.once('drain', pump);
      }
      s.end();
    };
    pump();
  });
  const sink = createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => undefined);
    let bytes = 0;
    s.on('data', (c: Buffer) => (bytes += c.length));
    s.on('end', () => s.end(`${bytes}\n`));
  });
  const echo = createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => undefined);
    s.pipe(s);
  });
  const servers: Server[] = [source, sink, echo];
  await Promise.all(servers.map((srv) => new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))));
  return {
    ports: servers.map((srv) => (srv.address() as AddressInfo).port),
    close: () => servers.forEach((srv) => srv.close()),
  };
}

/** MiB/s of reading everything a source sends on one fresh connection. */
function download(port: number, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let got = 0;
    const s = connect({ host: '127.0.0.1', port });
    s.on('data', (c: Buffer) => (got += c.length));
    s.once('error', reject);
    s.once('end', () => {
      if (got !== bytes) return reject(new Error(`download: ${got} bytes, expected ${bytes}`));
      resolve(bytes / 2 ** 20 / ((performance.now() - start) / 1000));
    });
  });
}

/** MiB/s of sending `bytes` to a sink on one fresh connection, until its count comes back. */
function upload(port: number, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    let sent = 0;
    let answer = '';
    const s = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const pump = () => {
      while (sent < bytes) {
        sent += CHUNK.length;
        if (!s.write(CHUNK)) return void s.once('drain', pump);
      }
      s.end();
    };
    s.once('connect', pump);
    s.on('data', (c: Buffer) => (answer += c.toString()));
    s.once('error', reject);
    s.once('end', () => {
      if (Number(answer) !== bytes) return reject(new Error(`upload: the sink counted ${answer.trim()}`));
      resolve(bytes / 2 ** 20 / ((performance.now() - start) / 1000));
    });
  });
}

/** Milliseconds from connect() to the echo of one byte, on a fresh connection. */
function setUp(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const s = connect({ host: '127.0.0.1', port, noDelay: true });
    s.once('connect', () => s.write('x'));
    s.once('data', () => {
      resolve(performance.now() - start);
      s.destroy();
    });
    s.once('error', reject);
    s.once('close', () => reject(new Error('closed before the echo')));
  });
}

function percentile(values: readonly number[], p: number): number | undefined {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The installation and two agents of one account: the access ports of the three shares, and the pids. */
async function startTunnel(
  dir: string,
  ports: readonly number[],
  nodeFlags: readonly string[],
): Promise<{ accessPorts: number[]; pids: number[] }> {
  const dataDir = (name: string) => join(dir, name);
  const [installation, sharer, accessor] = await Promise.all([
    startSvcInstallation({
      name: 'installation',
      dataDir: dataDir('installation'),
      domain: 'tcp.localhost',
      nodeFlags,
    }),
    startSvcServe({ name: 'sharing agent', dataDir: dataDir('sharer'), nodeFlags }),
    startSvcServe({ name: 'accessing agent', dataDir: dataDir('accessor'), nodeFlags }),
  ]);
  await enableAgents(installation, dataDir('installation'), [
    { dataDir: dataDir('sharer'), process: sharer },
    { dataDir: dataDir('accessor'), process: accessor },
  ]);
  const accessPorts: number[] = [];
  for (const port of ports) {
    const share = JSON.parse(
      await svcCommand([
        ...['share', 'private', '--backend-mode', 'tcp', `127.0.0.1:${port}`],
        ...['--json', '--data-dir', dataDir('sharer')],
      ]),
    ) as { token: string };
    const access = JSON.parse(
      await svcCommand(['access', 'private', share.token, '--json', '--data-dir', dataDir('accessor')]),
    ) as { endpoint: string };
    accessPorts.push(Number(new URL(access.endpoint).port));
  }
  return { accessPorts, pids: [accessor.pid, installation.pid, sharer.pid] };
}

const FLOOR_MODULE = fileURLToPath(new URL('./lib/tcp-floor.ts', import.meta.url));

/** The floors: the same servers through plain Node relay processes, hop by hop (in, out). */
const FLOORS: readonly { name: string; hops: readonly (readonly [FloorHop['inbound'], FloorHop['outbound']])[] }[] = [
  {
    name: 'floor: 3 Node TCP relays',
    hops: [
      ['tcp', 'tcp'],
      ['tcp', 'tcp'],
      ['tcp', 'tcp'],
    ],
  },
  {
    name: 'floor: 1 Node HTTP/2 stream (2 processes)',
    hops: [
      ['tcp', 'h2'],
      ['h2', 'tcp'],
    ],
  },
  {
    name: 'floor: 3 Node relays, HTTP/2 between',
    hops: [
      ['tcp', 'h2'],
      ['h2', 'h2'],
      ['h2', 'tcp'],
    ],
  },
];

/** One floor's relay processes, started from the servers' end: the entry ports and the pids. */
async function startFloor(
  hops: (typeof FLOORS)[number]['hops'],
  ports: readonly number[],
  nodeFlags: readonly string[],
) {
  let next = [...ports];
  const pids: number[] = [];
  for (const [inbound, outbound] of [...hops].reverse()) {
    const hop: FloorHop = { inbound, outbound, next, targets: ports.length };
    const child = await startModule<Awaited<ReturnType<typeof startFloorHop>>>(
      `floor ${inbound}->${outbound}`,
      FLOOR_MODULE,
      'startFloorHop',
      hop,
      20_000,
      { nodeFlags },
    );
    next = child.ready.ports;
    pids.unshift(child.pid);
  }
  return { ports: next, pids };
}

interface Figures {
  download: number[];
  upload: number[];
  setUpMs: number[];
  /** CPU ms per MiB moved of each svc process (accessing agent, installation, sharing agent). */
  cpuMsPerMiB: number[];
}

async function measure(
  ports: readonly number[],
  mib: number,
  rounds: number,
  connections: number,
  pids: readonly number[] = [],
): Promise<Figures> {
  const [source, sink, echo] = ports as [number, number, number];
  const figures: Figures = { download: [], upload: [], setUpMs: [], cpuMsPerMiB: [] };
  const cpuBefore = pids.map((pid) => cpuSeconds(pid) ?? 0);
  for (let i = 0; i < rounds; i++) {
    figures.download.push(await download(source, mib * 2 ** 20));
    figures.upload.push(await upload(sink, mib * 2 ** 20));
  }
  figures.cpuMsPerMiB = pids.map(
    (pid, i) => (((cpuSeconds(pid) ?? 0) - (cpuBefore[i] ?? 0)) * 1000) / (2 * rounds * mib),
  );
  for (let i = 0; i < connections; i++) figures.setUpMs.push(await setUp(echo));
  return figures;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mib: { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      'cpu-prof': { type: 'string' },
      'node-flags': { type: 'string', default: '' },
    },
  });
  const mib = intArg('mib', values.mib ?? '100', 1, 4096);
  const rounds = intArg('rounds', values.rounds ?? '3', 1, 50);
  const connections = intArg('connections', values.connections ?? '200', 1, 10_000);
  const profileDir = values['cpu-prof'];
  const nodeFlags = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const loadBefore = loadavg();
  installCleanup();
  const dir = scratchDir('svc-bench-tunnel-tcp-');
  const servers = await startServers(mib);
  try {
    const svcFlags = [...values['node-flags'].split(/\s+/).filter(Boolean), ...nodeFlags];
    const { accessPorts, pids } = await startTunnel(dir, servers.ports, svcFlags);
    // Warm both paths once (JIT, the first stream of a session).
    await measure(servers.ports, mib, 1, 20);
    await measure(accessPorts, mib, 1, 20);
    const direct = await measure(servers.ports, mib, rounds, connections);
    const tunnel = await measure(accessPorts, mib, rounds, connections, pids);
    const floors: [string, Figures][] = [];
    for (const floor of FLOORS) {
      const relays = await startFloor(floor.hops, servers.ports, nodeFlags);
      await measure(relays.ports, mib, 1, 20);
      floors.push([floor.name, await measure(relays.ports, mib, rounds, connections, relays.pids)]);
    }
    const row = (name: string, f: Figures) => [
      name,
      fixed(median(f.download), 0),
      ratio(median(f.download), median(direct.download)),
      fixed(median(f.upload), 0),
      ratio(median(f.upload), median(direct.upload)),
      fixed(median(f.setUpMs), 2),
      fixed(percentile(f.setUpMs, 95), 2),
      f.cpuMsPerMiB.length ? f.cpuMsPerMiB.map((ms) => fixed(ms, 1)).join(' + ') : '-',
    ];
    const table = markdownTable(
      [
        ...['path', 'download MiB/s', '× direct', 'upload MiB/s', '× direct', 'set-up p50 ms', 'set-up p95 ms'],
        'CPU ms/MiB per process (accessing agent + installation + sharing agent; floors: hop by hop)',
      ],
      [row('direct', direct), row('tunnel (TCP share)', tunnel), ...floors.map(([name, f]) => row(name, f))],
    );
    const markdown = [
      '# TCP share through the tunnel',
      '',
      `\`npm run bench:tunnel-tcp -- --mib ${mib} --rounds ${rounds} --connections ${connections}` +
        `${values['node-flags'] ? ` --node-flags='${values['node-flags']}'` : ''}\`: ` +
        `${mib} MiB each way on one connection (median of ${rounds}), set-up = connect + one-byte echo ` +
        `over ${connections} sequential fresh connections.`,
      '',
      ...machineLines(loadBefore),
      '',
      table,
    ].join('\n');
    process.stdout.write(`${markdown}\n`);
    await writeMarkdown(REPORT, markdown);
  } finally {
    servers.close();
    await stopAll();
    removeScratchDir(dir);
  }
}

await main();
