import net from 'node:net';
import { DIRECT_UPGRADE, ENVIRONMENT_TOKEN_HEADER, TUNNEL_PATH } from '../../lib/tunnel/protocol.ts';

/** An HPACK literal header field without indexing, new name, no Huffman (names and values < 127 bytes). */
function literal(name: string, value: string): Buffer {
  return Buffer.concat([
    Buffer.from([0x00, name.length]),
    Buffer.from(name),
    Buffer.from([value.length]),
    Buffer.from(value),
  ]);
}

function frame(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(id, 5);
  return Buffer.concat([head, payload]);
}

const FRAME = { headers: 1, settings: 4, ping: 6 } as const;
const FLAG = { ack: 0x1, endStream: 0x1, endHeaders: 0x4 } as const;

/**
 * A hostile agent written by hand: it dials the installation's tunnel endpoint on 127.0.0.1:`port`
 * with its own valid environment token over the direct transport and then speaks HTTP/2 as the
 * server frame by frame, so it can send what Node's HTTP/2 server refuses to. Every stream the
 * installation opens is answered with the header fields `answer()` returns (`:status` first),
 * END_STREAM set. Resolves once the upgrade is accepted; `close()` hangs up.
 */
export async function startRawAgent(
  port: number,
  token: string,
  answer: () => [string, string][],
): Promise<{ streams(): number; close(): void }> {
  const socket = net.connect({ host: '127.0.0.1', port });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(
    `GET ${TUNNEL_PATH} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: ${DIRECT_UPGRADE}\r\n` +
      `${ENVIRONMENT_TOKEN_HEADER}: ${token}\r\n\r\n`,
  );
  let pending = Buffer.alloc(0);
  let upgraded = false;
  let preface = false;
  let streams = 0;
  const answerFrames = (): void => {
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) return;
      const type = pending[3];
      const flags = pending[4] ?? 0;
      const id = pending.readUInt32BE(5) & 0x7fffffff;
      const payload = pending.subarray(9, 9 + length);
      pending = pending.subarray(9 + length);
      if (type === FRAME.settings && !(flags & FLAG.ack))
        socket.write(frame(FRAME.settings, FLAG.ack, 0, Buffer.alloc(0)));
      if (type === FRAME.ping && !(flags & FLAG.ack)) socket.write(frame(FRAME.ping, FLAG.ack, 0, payload));
      if (type === FRAME.headers) {
        streams++;
        const block = Buffer.concat(answer().map(([name, value]) => literal(name, value)));
        socket.write(frame(FRAME.headers, FLAG.endHeaders | FLAG.endStream, id, block));
      }
    }
  };
  await new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      if (!upgraded) {
        const end = pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        if (!pending.subarray(0, 12).toString().includes('101')) return reject(new Error(pending.toString()));
        pending = pending.subarray(end + 4);
        upgraded = true;
        socket.write(frame(FRAME.settings, 0, 0, Buffer.alloc(0)));
        resolve();
      }
      if (!preface) {
        if (pending.length < 24) return;
        pending = pending.subarray(24);
        preface = true;
      }
      answerFrames();
    });
  });
  return { streams: () => streams, close: () => socket.destroy() };
}
