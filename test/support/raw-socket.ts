import { connect, type Socket } from 'node:net';

export interface RawReply {
  /** Status code of the first response, 0 when the server closed without answering. */
  readonly status: number;
  /** Everything the server sent before closing (or before `settleMs` of silence). */
  readonly text: string;
  /** True when the server closed the connection (rather than falling silent). */
  readonly closedByServer: boolean;
}

/**
 * Sends `bytes` exactly as given over a fresh TCP connection to 127.0.0.1:port and collects the
 * answer: for requests no HTTP client library would send (two Host headers, obs-fold, conflicting
 * framing). Resolves when the server closes or after `settleMs` without data.
 */
export function rawExchange(port: number, bytes: string, settleMs = 1_500): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    const finish = (closedByServer = false): void => {
      clearTimeout(timer);
      socket.destroy();
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      resolve({ status: match ? Number(match[1]) : 0, text, closedByServer });
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(), settleMs);
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (complete(text)) finish();
      else arm();
    });
    socket.on('close', () => finish(true));
    socket.on('error', (err) => (text === '' ? reject(err) : finish(true)));
    socket.write(bytes, 'latin1');
    arm();
  });
}

/** True once `text` holds a whole response framed by Content-Length. */
function complete(text: string): boolean {
  const end = text.indexOf('\r\n\r\n');
  if (end === -1) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
  return length !== null && text.length - end - 4 >= Number(length[1]);
}

/** A client that sends its request one byte every `intervalMs` (slowloris), never finishing it. */
export interface SlowClient {
  readonly socket: Socket;
  /** Resolves with the milliseconds the connection stayed open, once the server closes it. */
  readonly closed: Promise<number>;
  /** Whether the server answered anything before closing (e.g. 408 or 503). */
  answer(): string;
  stop(): void;
}

export function slowClient(
  port: number,
  options: { host: string; intervalMs: number; localAddress?: string; silent?: boolean },
): SlowClient {
  const socket = connect({
    port,
    host: '127.0.0.1',
    ...(options.localAddress ? { localAddress: options.localAddress } : {}),
  });
  const opened = Date.now();
  let answer = '';
  const text = `GET / HTTP/1.1\r\nHost: ${options.host}\r\nX-Slow: ${'a'.repeat(10_000)}`;
  let sent = 0;
  const timer = options.silent
    ? undefined
    : setInterval(() => {
        if (sent < text.length && socket.writable) socket.write(text[sent++] as string);
      }, options.intervalMs);
  socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) =>
    socket.once('close', () => {
      clearInterval(timer);
      resolve(Date.now() - opened);
    }),
  );
  return {
    socket,
    closed,
    answer: () => answer,
    stop() {
      clearInterval(timer);
      socket.destroy();
    },
  };
}
