import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer, createWebSocketStream } from 'ws';
import { batches, webSocketDuplex } from './ws-duplex.ts';

const CAP = 4096;
const servers: WebSocketServer[] = [];

afterEach(async () => {
  for (const wss of servers.splice(0)) {
    for (const client of wss.clients) client.terminate();
    await new Promise((resolve) => wss.close(resolve));
  }
});

/** A connected ws pair on 127.0.0.1, both ends refusing messages above CAP as the tunnel's do. */
async function pair(): Promise<{ client: WebSocket; server: WebSocket }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, maxPayload: CAP, perMessageDeflate: false });
  servers.push(wss);
  await once(wss, 'listening');
  const { port } = wss.address() as AddressInfo;
  const accepted = once(wss, 'connection') as Promise<[WebSocket]>;
  const client = new WebSocket(`ws://127.0.0.1:${port}`, { maxPayload: CAP, perMessageDeflate: false });
  await once(client, 'open');
  const [server] = await accepted;
  return { client, server };
}

/** Every byte the Duplex reads until its end. */
async function readAll(duplex: Duplex): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of duplex) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

/** Resolves on `close`; unlike events.once, an `error` before it does not reject. */
function closed(stream: Duplex): Promise<void> {
  return new Promise((resolve) => stream.once('close', () => resolve()));
}

function pattern(size: number, seed: number): Buffer {
  const out = Buffer.alloc(size);
  for (let i = 0; i < size; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

describe('batches', () => {
  it('keeps the bytes in order, never exceeds the cap, and sends a lone fitting chunk uncopied', () => {
    const chunks = [pattern(10, 1), pattern(5000, 2), pattern(1, 3), pattern(4096, 4), pattern(300, 5)];
    const out = batches(chunks, CAP);
    expect(Buffer.concat(out).equals(Buffer.concat(chunks))).toBe(true);
    expect(Math.max(...out.map((b) => b.length))).toBeLessThanOrEqual(CAP);
    expect(out.map((b) => b.length)).toEqual([4096, 4096, 1215]);
    const lone = pattern(100, 6);
    expect(batches([lone], CAP)[0]).toBe(lone);
    expect(batches([], CAP)).toEqual([]);
  });
});

describe('webSocketDuplex', () => {
  it('sends queued frames as fewer messages, each within the peer maxPayload, bytes in order', async () => {
    const { client, server } = await pair();
    const sizes: number[] = [];
    server.on('message', (data: Buffer) => sizes.push(data.length));
    const received = readAll(webSocketDuplex(server, CAP));
    const duplex = webSocketDuplex(client, CAP);
    const sent: Buffer[] = [];
    duplex.cork();
    for (let i = 0; i < 400; i++) {
      const chunk = pattern(1 + ((i * 97) % 6000), i);
      sent.push(chunk);
      duplex.write(chunk);
      if (i % 50 === 0) {
        duplex.uncork();
        duplex.cork();
      }
    }
    duplex.uncork();
    duplex.end();
    const bytes = await received;
    expect(bytes.equals(Buffer.concat(sent))).toBe(true);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(CAP);
    // 400 writes, many of them above the cap, yet far fewer messages than writes plus splits.
    expect(sizes.length).toBeLessThan(sent.length);
  });

  it('signals backpressure: write returns false past the high-water mark, then drain', async () => {
    const { client, server } = await pair();
    const received = readAll(webSocketDuplex(server, CAP));
    const duplex = webSocketDuplex(client, CAP);
    const big = pattern(64 * 1024, 7);
    expect(duplex.write(big)).toBe(false);
    await once(duplex, 'drain');
    duplex.end();
    expect((await received).equals(big)).toBe(true);
  });

  it('fails with the error when a peer sends a message above maxPayload, and closes', async () => {
    const { client, server } = await pair();
    const duplex = webSocketDuplex(client, CAP);
    const errored = once(duplex, 'error') as Promise<[Error]>;
    const done = closed(duplex);
    server.send(Buffer.alloc(CAP + 1));
    const [err] = await errored;
    expect(err.message).toMatch(/max payload/i);
    await done;
    expect(duplex.destroyed).toBe(true);
  });

  it('fails a write once the WebSocket is closed', async () => {
    const { client, server } = await pair();
    const duplex = webSocketDuplex(client, CAP);
    duplex.on('error', () => undefined);
    server.terminate();
    await once(client, 'close');
    const written = new Promise<Error | null | undefined>((resolve) => duplex.write(Buffer.from('late'), resolve));
    expect(String(await written)).toMatch(/not open/i);
    expect(duplex.destroyed).toBe(true);
  });
});

/** The lifecycle the tunnel relies on, checked against ws's own stream and ours alike. */
describe.each([
  ['createWebSocketStream', (ws: WebSocket) => createWebSocketStream(ws)],
  ['webSocketDuplex', (ws: WebSocket) => webSocketDuplex(ws, CAP)],
])('%s lifecycle', (_name, wrap) => {
  it('end: the peer reads every byte then its end; both ends close', async () => {
    const { client, server } = await pair();
    const near = wrap(client);
    const far = wrap(server);
    const received = readAll(far);
    // The tunnel's HTTP/2 session reads its side to the end too; a Duplex closes once both halves end.
    near.resume();
    near.end(Buffer.from('last words'));
    expect((await received).toString()).toBe('last words');
    far.end();
    await Promise.all([closed(near), closed(far)]);
    expect(near.destroyed && far.destroyed).toBe(true);
    expect(client.readyState).toBe(WebSocket.CLOSED);
  });

  it('peer close: the stream ends, and closes once destroyed', async () => {
    const { client, server } = await pair();
    const near = wrap(client);
    const ended = readAll(near);
    server.close(1000, 'bye');
    expect((await ended).length).toBe(0);
    expect(near.readableEnded).toBe(true);
    const done = closed(near);
    near.destroy();
    await done;
  });

  it('destroy terminates the WebSocket', async () => {
    const { client, server } = await pair();
    const near = wrap(client);
    const serverClosed = once(server, 'close');
    const done = closed(near);
    near.destroy();
    await Promise.all([done, serverClosed]);
    expect(client.readyState).toBe(WebSocket.CLOSED);
  });
});
