import { connect, type Socket } from 'node:net';
import { getPriority, setPriority } from 'node:os';
import { BackendProtocolError, ResponseFramer } from '../../lib/fast-upstream/response-framer.ts';

/** Latency at a fixed arrival rate (open loop): requests leave on schedule, whatever the replies do. */
export interface FixedRateOptions {
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Requests per second to send. */
  readonly rate: number;
  readonly durationSeconds: number;
  /** Keep-alive connections at most (requests beyond wait for one, and their wait counts). */
  readonly connections: number;
  /**
   * Seconds at the same rate before the timed run, its replies not timed (default 1): the
   * generator's own code is compiled by then (without it, a cold run's first 1.5 s put 2–12 ms
   * into the p99 of the bare backend; after, 0.7 ms).
   */
  readonly warmupSeconds?: number;
  /**
   * The generator's scheduling priority for the run (a nice value, -20 to 19), where the system
   * permits it (a lower value needs root): ahead of the other processes on its core it keeps its
   * schedule better, with fewer stalls (docs/benchmarks-history.md, "Fewer objects per request"). Absent: left as it is.
   */
  readonly priority?: number;
  /** How long a request may go unanswered before it counts as an error (default 30 s). */
  readonly replyTimeoutMs?: number;
}

export interface FixedRateResult {
  readonly rate: number;
  /** Requests sent in the timed run (`durationSeconds`), and before it in the generator's warm-up. */
  readonly sent: number;
  readonly warmupSent?: number;
  readonly completed: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly non2xx: number;
  readonly errors: number;
  /** What the errors were, as the generator words them, when it says. */
  readonly errorKinds?: readonly string[];
  /**
   * The socket client's own stalls in the timed run: times its event loop came back to send more
   * than `STALL_MS` after it last did (its ~1 ms timer tick late: a collection of its own, or no
   * core for it), and the longest. The requests due meanwhile leave together when it resumes, a
   * burst the server then queues: the report shows these beside the tail they explain.
   */
  readonly stalls?: number;
  readonly longestStallMs?: number;
  /** The nice value the socket client ran at. */
  readonly priority?: number;
}

/** A gap this long between two sends is a stall of the generator (its timer ticks every ~1 ms). */
const STALL_MS = 2;

/** A request still unanswered after this long counts as an error. */
const REPLY_TIMEOUT_MS = 30_000;

/**
 * The longest a run can last once connected: its warm-up and timed sends, then the wait for the
 * last replies. A proxy that falls behind the rate is answering its queue for all of that wait.
 */
export function longestRunMs(
  options: Pick<FixedRateOptions, 'durationSeconds' | 'warmupSeconds' | 'replyTimeoutMs'>,
): number {
  return ((options.warmupSeconds ?? 1) + options.durationSeconds) * 1000 + (options.replyTimeoutMs ?? REPLY_TIMEOUT_MS);
}

/** One keep-alive connection and the request it carries, if any. */
interface Connection {
  readonly socket: Socket;
  /** The request in flight on it; undefined when idle. */
  request: InFlight | undefined;
  open: boolean;
}

interface InFlight {
  /** When the generator found the request due (ms, performance.now()). */
  readonly since: number;
  /** Whether it is timed (not one of the warm-up's). */
  readonly timed: boolean;
  readonly framer: ResponseFramer;
}

/**
 * Sends `rate` requests per second for `durationSeconds` on at most `connections` keep-alive
 * connections, and times each one from the moment the generator found it due (the timer tick or
 * reply below; the moment it is written when a connection is free) to the last byte of its reply:
 * a request that waits for a free connection has that wait counted, and the sending never waits
 * for replies, so a slow server cannot hide its queueing (no coordinated omission).
 *
 * Why not Node's HTTP client or vegeta: at the frontend's half
 * saturation on a 2-core machine, vegeta took 0.8–0.9 of a core (60–70 µs per request) and Node's
 * client more, so the generator and the backend overloaded the core they shared and decided the
 * p99 being measured. This client writes one prebuilt request head per request on a raw socket,
 * reads replies into one reused buffer (`onread`), and finds their ends with the frontend's own
 * response framer (RFC 9112 §6.3), which also refuses a malformed reply.
 *
 * Pacing: requests become due on a uniform schedule; the due ones are sent at each timer tick
 * (~1 ms, the event loop's resolution) and after each reply, so while replies flow the sends follow
 * the schedule closely, and when they do not, they leave in bursts of at most a tick's worth.
 * Run it in its own process (`startModule`).
 */
export async function runFixedRate(options: FixedRateOptions): Promise<FixedRateResult> {
  const target = new URL(options.url);
  if (target.protocol !== 'http:') throw new Error(`fixed-rate: only http:// targets, not ${options.url}`);
  const port = Number(target.port || 80);
  if (options.priority !== undefined) {
    try {
      setPriority(options.priority);
    } catch {
      // Not permitted (a lower value without root): the run keeps the priority it has, and says which.
    }
  }
  const head = requestHead(target, options.headers ?? {});
  const untimed = Math.round(options.rate * (options.warmupSeconds ?? 1));
  const timed = Math.round(options.rate * options.durationSeconds);
  const total = untimed + timed;
  const latencies = new Float64Array(timed);
  const errorKinds = new Set<string>();
  /** Replies, timed or not. */
  let replies = 0;
  let completed = 0;
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  /** Due times of requests waiting for a free connection, in order. */
  const waiting: number[] = [];
  let waitingHead = 0;
  const idle: Connection[] = [];
  /** Every connection not yet closed, busy or idle: all are destroyed when the run ends. */
  const live = new Set<Connection>();
  let opened = 0;
  let start = 0;
  let finish: () => void = () => undefined;
  /** Set when the run ends: the connections then closing must not send what was still waiting. */
  let over = false;

  const settled = (): number => replies + errors;
  const fail = (kind: string): void => {
    errors += 1;
    errorKinds.add(kind);
  };

  let dispatched = 0;
  const send = (conn: Connection, since: number): void => {
    conn.request = { since, timed: dispatched >= untimed, framer: new ResponseFramer(false) };
    dispatched += 1;
    conn.socket.write(head);
  };

  let lastPump = 0;
  let stalls = 0;
  let longestStallMs = 0;
  /** Sends every request that is due, on idle connections; the rest wait for one. */
  const pump = (): void => {
    if (over) return;
    const now = performance.now();
    const gap = now - lastPump;
    if (dispatched >= untimed && sent < total && lastPump > 0 && gap > STALL_MS) {
      stalls += 1;
      longestStallMs = Math.max(longestStallMs, gap);
    }
    lastPump = now;
    const due = Math.min(total, Math.floor(((now - start) * options.rate) / 1000) + 1);
    for (; sent < due; sent += 1) waiting.push(now);
    while (waitingHead < waiting.length) {
      const conn = idle.pop() ?? (opened < options.connections ? openConnection() : undefined);
      if (!conn) break;
      send(conn, waiting[waitingHead] as number);
      waitingHead += 1;
    }
    if (waitingHead > 4096 && waitingHead * 2 > waiting.length) {
      waiting.splice(0, waitingHead);
      waitingHead = 0;
    }
  };

  /** A request was answered or failed: its place goes to the next due one, and the run may be over. */
  const settledOne = (): void => {
    if (start > 0) pump();
    if (settled() === total) finish();
  };

  const release = (conn: Connection): void => {
    conn.request = undefined;
    if (conn.open) idle.push(conn);
    settledOne();
  };

  const onReply = (conn: Connection, chunk: Buffer): void => {
    const request = conn.request;
    if (!request) {
      conn.socket.destroy();
      lost(conn, 'bytes from the server with no request outstanding');
      return;
    }
    const framer = request.framer;
    // The framer keeps an unfinished head's pieces: those must not be the reused read buffer.
    const bytes = framer.headParsed ? chunk : Buffer.from(chunk);
    let used: number;
    try {
      used = framer.feed(bytes, () => undefined);
    } catch (err) {
      conn.socket.destroy();
      lost(conn, err instanceof BackendProtocolError ? err.message : String(err));
      return;
    }
    if (!framer.done) return;
    const status = framer.headParsed?.status ?? 0;
    replies += 1;
    if (request.timed) {
      latencies[completed] = performance.now() - request.since;
      completed += 1;
    }
    if (status < 200 || status > 299) non2xx += 1;
    if (used < bytes.length) {
      conn.socket.destroy();
      lost(conn, 'more bytes than the response framed (the server answered twice)');
      return;
    }
    if (framer.headParsed?.closes) retire(conn);
    release(conn);
  };

  /** The connection can carry no more requests: take it out, and open another in its place when needed. */
  const retire = (conn: Connection): void => {
    if (!conn.open) return;
    conn.open = false;
    opened -= 1;
    const at = idle.indexOf(conn);
    if (at >= 0) idle.splice(at, 1);
    conn.socket.end();
  };

  /** The connection failed: its request, if any, is an error. */
  const lost = (conn: Connection, kind: string): void => {
    const had = conn.request !== undefined;
    retire(conn);
    conn.request = undefined;
    if (had) {
      fail(kind);
      settledOne();
    }
  };

  const readBuffer = Buffer.allocUnsafe(64 * 1024);
  const openConnection = (): Connection => {
    opened += 1;
    const socket = connect({
      host: target.hostname,
      port,
      noDelay: true,
      onread: {
        buffer: readBuffer,
        callback: (nread: number, buf: Uint8Array): boolean => {
          // No read can come before `conn` below is set: reads start on a later turn of the loop.
          onReply(conn, Buffer.from(buf.buffer, buf.byteOffset, nread));
          return true;
        },
      },
    });
    const conn: Connection = { socket, request: undefined, open: true };
    live.add(conn);
    socket.on('error', (err: NodeJS.ErrnoException) => lost(conn, err.code ?? err.message));
    socket.on('close', () => {
      live.delete(conn);
      // The end of a close-delimited body (the framer marks it as closing, so it is not reused).
      if (conn.request?.framer.end() === true) {
        onReply(conn, Buffer.alloc(0));
        return;
      }
      lost(conn, 'connection closed before the reply ended');
    });
    return conn;
  };

  // Connections open before the clock starts, as a browser's would already be.
  const warm = Array.from({ length: options.connections }, openConnection);
  await Promise.all(
    warm.map(
      (conn) =>
        new Promise<void>((resolve, reject) => {
          conn.socket.once('connect', resolve);
          conn.socket.once('error', reject);
        }),
    ),
  );
  idle.push(...warm.reverse());

  const done = new Promise<void>((resolve) => (finish = resolve));
  start = performance.now();
  const ticker = setInterval(() => {
    pump();
    if (sent === total) clearInterval(ticker);
  }, 1);
  pump();
  const replyTimeoutMs = options.replyTimeoutMs ?? REPLY_TIMEOUT_MS;
  const deadline = setTimeout(finish, (total / options.rate) * 1000 + replyTimeoutMs);
  await done;
  over = true;
  clearInterval(ticker);
  clearTimeout(deadline);
  const unanswered = total - settled();
  if (unanswered > 0) {
    errors += unanswered;
    errorKinds.add(`no reply within ${replyTimeoutMs / 1000} s`);
  }
  // Busy ones too: a socket left open would keep this process (a `startModule` child) alive.
  for (const conn of live) conn.socket.destroy();

  const sorted = latencies.subarray(0, completed).sort();
  const pct = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
  return {
    rate: options.rate,
    sent: Math.max(0, sent - untimed),
    warmupSent: Math.min(sent, untimed),
    completed,
    p50Ms: pct(0.5),
    p90Ms: pct(0.9),
    p99Ms: pct(0.99),
    maxMs: sorted.at(-1) ?? NaN,
    non2xx,
    errors,
    errorKinds: [...errorKinds],
    stalls,
    longestStallMs,
    priority: getPriority(),
  };
}

/** The request every send writes: one GET head, built once (a `host` in `headers` replaces the URL's). */
function requestHead(target: URL, headers: Readonly<Record<string, string>>): Buffer {
  const lines = [`GET ${target.pathname}${target.search} HTTP/1.1`];
  const given = Object.keys(headers).map((name) => name.toLowerCase());
  if (!given.includes('host')) lines.push(`host: ${target.host}`);
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
}
