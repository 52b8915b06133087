/**
 * The floor of `bench:tunnel-tcp`: one relay hop in plain Node, run in its own process
 * (bench/lib/run-module.ts), with none of svc's code. A hop accepts TCP connections or HTTP/2
 * streams and forwards each to the next hop as a TCP connection or an HTTP/2 stream, piped both
 * ways with each direction's end passed on. Chained three deep it has the product's shape (TCP in,
 * HTTP/2 twice, TCP out) or the same three processes with plain TCP between them.
 */
import http2 from 'node:http2';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * What one hop listens with and forwards over. A hop relays to `targets` destinations: a TCP hop
 * listens on one port per destination, an HTTP/2 hop on one port with the destination's index as
 * the stream's path. `next` is the next hop's ports (one when it takes HTTP/2) or the servers'.
 */
export interface FloorHop {
  readonly inbound: 'tcp' | 'h2';
  readonly outbound: 'tcp' | 'h2';
  readonly next: readonly number[];
  readonly targets: number;
}

/** The product's stream and session windows, so the floor's HTTP/2 moves the same bytes in flight. */
const STREAM_WINDOW = 1024 * 1024;
const SESSION_WINDOW = 16 * 1024 * 1024;

function splice(a: Duplex, b: Duplex): void {
  for (const [from, into] of [
    [a, b],
    [b, a],
  ] as const) {
    from.on('error', () => into.destroy());
    from.pipe(into);
  }
}

/** Starts one hop on 127.0.0.1 port 0: its port and pid (the bench reads its CPU). */
export async function startFloorHop(hop: FloorHop): Promise<{ ports: number[]; pid: number; close(): void }> {
  let session: http2.ClientHttp2Session | undefined;
  if (hop.outbound === 'h2') {
    const client = http2.connect(`http://127.0.0.1:${hop.next[0]}`, { settings: { initialWindowSize: STREAM_WINDOW } });
    client.once('connect', () => client.setLocalWindowSize(SESSION_WINDOW));
    await new Promise((resolve) => client.once('remoteSettings', resolve));
    session = client;
  }
  const forward = (incoming: Duplex, target: number): void => {
    const out: Duplex = session
      ? session.request({ ':method': 'POST', ':path': `/${target}` }, { endStream: false })
      : connect({ host: '127.0.0.1', port: hop.next[target] ?? 0, allowHalfOpen: true });
    splice(incoming, out);
  };
  const servers: (Server | http2.Http2Server)[] = [];
  if (hop.inbound === 'h2') {
    const h2 = http2.createServer({ settings: { initialWindowSize: STREAM_WINDOW } });
    h2.on('session', (s) => s.once('localSettings', () => s.setLocalWindowSize(SESSION_WINDOW)));
    h2.on('stream', (stream, headers) => {
      stream.respond({ ':status': 200 });
      forward(stream, Number(headers[':path']?.slice(1)));
    });
    servers.push(h2);
  } else {
    for (let i = 0; i < hop.targets; i++) servers.push(createServer({ allowHalfOpen: true }, (s) => forward(s, i)));
  }
  await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))));
  return {
    ports: servers.map((srv) => (srv.address() as AddressInfo).port),
    pid: process.pid,
    close: () => {
      session?.close();
      servers.forEach((srv) => srv.close());
    },
  };
}
