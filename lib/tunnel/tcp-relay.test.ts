import http2 from 'node:http2';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { socketEnd, spliceEnds, streamEnd } from './tcp-relay.ts';

/**
 * The splice under a TCP share's connections, on real sockets and a real HTTP/2 session: each
 * direction half-closes on its own, and a failure of one end reaches the other as a reset, never as
 * a clean end.
 */
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

function listen(server: Server): Promise<number> {
  closers.push(() => server.close());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A client whose every accepted connection is spliced to a fresh connection to `targetPort`. */
async function relayTo(targetPort: number): Promise<number> {
  const relay = createServer({ allowHalfOpen: true }, (socket) => {
    const out = connect({ host: '127.0.0.1', port: targetPort, allowHalfOpen: true });
    out.once('connect', () => spliceEnds(socketEnd(socket), socketEnd(out)));
  });
  return listen(relay);
}

/** Reads a socket until it ends or fails: the text, and `end` or the error code. */
function readAll(socket: Socket): Promise<{ text: string; ending: string }> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.once('end', () => resolve({ text, ending: 'end' }));
    socket.once('error', (err: NodeJS.ErrnoException) => resolve({ text, ending: err.code ?? err.message }));
  });
}

describe('spliceEnds', () => {
  it("keeps the other direction open after a client's FIN, then passes the server's FIN", async () => {
    // The target answers only after the client's FIN, and only then closes: a half-closed exchange.
    const target = createServer({ allowHalfOpen: true }, (s) => {
      let got = '';
      s.on('data', (c: Buffer) => (got += c.toString()));
      s.on('end', () => setTimeout(() => s.end(`got ${got.length} bytes after your FIN`), 50));
    });
    const port = await relayTo(await listen(target));
    const client = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    client.end('x'.repeat(100_000));
    expect(await readAll(client)).toEqual({ text: 'got 100000 bytes after your FIN', ending: 'end' });
  });

  it('turns a reset of the target into a reset of the client, not a clean end', async () => {
    const target = createServer((s) => s.once('data', () => s.resetAndDestroy()));
    const port = await relayTo(await listen(target));
    const client = connect({ host: '127.0.0.1', port });
    client.write('hello');
    expect((await readAll(client)).ending).toBe('ECONNRESET');
  });

  it('turns an HTTP/2 stream reset into a reset of the socket spliced to it', async () => {
    const h2 = http2.createServer();
    h2.on('stream', (stream) => {
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200 });
      stream.write('first bytes');
      // As the relay resets (relay.ts resetStream): RST_STREAM alone, no END_STREAM before it.
      setTimeout(() => stream.destroy(new Error('the far end failed')), 50);
    });
    const h2Port = await listen(h2);
    const session = http2.connect(`http://127.0.0.1:${h2Port}`);
    closers.push(() => session.destroy());
    const relay = createServer({ allowHalfOpen: true }, (socket) => {
      const stream = session.request({ ':method': 'POST', ':path': '/' }, { endStream: false });
      stream.once('response', () => spliceEnds(socketEnd(socket), streamEnd(stream)));
    });
    const client = connect({ host: '127.0.0.1', port: await listen(relay) });
    const result = await readAll(client);
    expect(result).toEqual({ text: 'first bytes', ending: 'ECONNRESET' });
  });
});
