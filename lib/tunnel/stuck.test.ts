import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { socketEnd, spliceEnds } from './tcp-relay.ts';

/**
 * The splice's stuck watch on real sockets: a connection whose bytes wait (the target stopped
 * reading) is cut after the limit without progress; a quiet one with nothing waiting is left open.
 */
const STUCK_MS = 300;
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

function listen(server: Server): Promise<number> {
  closers.push(() => server.close());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A relay splicing each connection to `targetPort` with the stuck watch on. */
async function relayTo(targetPort: number): Promise<number> {
  const relay = createServer({ allowHalfOpen: true }, (socket) => {
    closers.push(() => socket.destroy());
    const out = connect({ host: '127.0.0.1', port: targetPort, allowHalfOpen: true });
    out.once('connect', () => spliceEnds(socketEnd(socket), socketEnd(out), STUCK_MS));
  });
  return listen(relay);
}

function client(port: number): Socket {
  const socket = connect({ host: '127.0.0.1', port });
  socket.on('error', () => undefined);
  closers.push(() => socket.destroy());
  return socket;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a spliced connection with the stuck watch', () => {
  it('is cut once bytes wait and none moved for the limit', async () => {
    const sink = createServer((s) => {
      s.on('error', () => undefined);
      s.pause();
    });
    const socket = client(await relayTo(await listen(sink)));
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = (): void => {
      while (!socket.destroyed && socket.write(chunk));
      if (!socket.destroyed) socket.once('drain', pump);
    };
    socket.once('connect', pump);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const outcome = await Promise.race([closed.then(() => 'cut'), sleep(20 * STUCK_MS).then(() => 'open')]);
    expect(outcome).toBe('cut');
  });

  it('stays open while quiet with nothing waiting, and still carries bytes', async () => {
    const echo = createServer((s) => {
      s.on('error', () => undefined);
      s.pipe(s);
    });
    const socket = client(await relayTo(await listen(echo)));
    socket.setEncoding('utf8');
    const next = (): Promise<string> => new Promise((resolve) => socket.once('data', resolve));
    socket.write('hello');
    expect(await next()).toBe('hello');
    await sleep(5 * STUCK_MS);
    expect(socket.destroyed).toBe(false);
    socket.write('still there');
    expect(await next()).toBe('still there');
  });
});
