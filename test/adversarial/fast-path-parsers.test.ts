import fc from 'fast-check';
import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRequestHead } from '../../sidecar/fast-path/request-head.ts';
import { BackendProtocolError, ResponseFramer } from '../../lib/fast-upstream/response-framer.ts';
import { suiteFigures, type AttackTally } from '../support/figures.ts';
import { startTestFrontend, UNREACHABLE_IDP1, type TestFrontend } from '../support/frontend.ts';
import { requestHeads, responses, type Generated, type GeneratedResponse } from '../support/http-mutations.ts';
import {
  startRequestReference,
  startResponseReference,
  type NodeRequestVerdict,
  type RequestReference,
  type ResponseReference,
} from '../support/node-http-reference.ts';
import { PLANS, startTaggingBackend, type Plan, type TaggingBackend } from '../support/tagging-backend.ts';

/**
 * The fast path's request and response parsers (sidecar/fast-path/) against Node's own (llhttp,
 * through `node:http`), on generated and mutated bytes. The fast path may refuse more than Node
 * (a refused request goes to Node's server, a refused response is a 502), but what it accepts it
 * must read as Node does: the same request fields, the same response boundary.
 */
const figures = suiteFigures('fast-path-parsers');
const SOCKET = { remoteAddress: '127.0.0.1' };
const SENTINEL = 'GET /sentinel HTTP/1.1\r\nHost: sentinel\r\n\r\n';

let requests: RequestReference;
let nodeClient: ResponseReference;

beforeAll(async () => {
  [requests, nodeClient] = await Promise.all([startRequestReference(), startResponseReference()]);
});

afterAll(async () => {
  figures.write();
  await Promise.all([requests?.close(), nodeClient?.close()]);
});

/** Tallies per generated class, made on first use; `fixed` says what a class needed fixed. */
function tallies(prefix: string, fixed: Readonly<Record<string, string>> = {}): (kind: string) => AttackTally {
  const made = new Map<string, AttackTally>();
  return (kind) => {
    let tally = made.get(kind);
    if (!tally) {
      tally = figures.attackClass(`${prefix}: ${kind}`, fixed[kind]);
      made.set(kind, tally);
    }
    return tally;
  };
}

/**
 * The fast path's reading of `bytes` as the frontend does it (the head is what comes before the
 * first CRLFCRLF), checked against Node's server reading the same bytes: whatever the fast path
 * takes, Node reads as one bodiless, kept-alive request with the same fields, then the next one.
 */
async function checkRequest(bytes: string, node?: NodeRequestVerdict): Promise<'fast path' | 'Node'> {
  const end = bytes.indexOf('\r\n\r\n');
  const fast = end < 0 ? undefined : parseRequestHead(bytes.slice(0, end), SOCKET);
  if (!fast) return 'Node';
  const verdict = node ?? (await requests.read(bytes.slice(0, end + 4) + SENTINEL));
  expect(verdict.error, 'Node refused what the fast path took').toBeUndefined();
  expect(verdict.requests.map((r) => r.url)).toEqual([fast.url, '/sentinel']);
  const [first] = verdict.requests;
  expect(first).toEqual({
    method: fast.method,
    url: fast.url,
    version: '1.1',
    headers: expect.any(Array) as unknown,
    bodyLength: 0,
    keepAlive: true,
  });
  // The fast path keeps one value per name (it refuses repeats): Node must have read every line, each once.
  expect(first?.headers.length).toBe(Object.keys(fast.headers).length);
  expect(Object.fromEntries(first?.headers ?? [])).toEqual({ ...fast.headers });
  return 'fast path';
}

describe('request heads: the fast path against Node’s server', () => {
  const tally = tallies('Request heads read as Node reads them or left to Node', {
    'long lines and heads near 16 KiB': 'heads of over 1000 header lines took the fast path; Node answers them 431',
  });

  it('takes only what Node reads the same way (generated and mutated heads)', async () => {
    const taken = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(requestHeads, async ({ kind, bytes }: Generated) => {
        await tally(kind).run(async () => {
          const path = await checkRequest(bytes);
          if (path === 'fast path') taken.set(kind, (taken.get(kind) ?? 0) + 1);
        });
      }),
      { numRuns: 1000 },
    );
    figures.measure(
      'request heads the fast path took, by class',
      [...taken].map(([kind, n]) => `${kind}: ${n}`).join('; '),
    );
    // The property is not empty: valid heads do take the fast path.
    expect(taken.get('valid browser-style heads')).toBeGreaterThan(0);
  });
});

/** What the framer made of a backend's bytes, read in pieces cut at `cuts`, then the backend's close. */
type Framed =
  | { readonly kind: 'refused' }
  | { readonly kind: 'truncated' }
  | { readonly kind: 'complete'; readonly relayed: string; readonly reusable: boolean; readonly untilClose: boolean };

const NEXT_RESPONSE = 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext';

function frame(bytes: string, method: 'GET' | 'HEAD', cuts: readonly number[]): Framed {
  const framer = new ResponseFramer(method === 'HEAD');
  const data = Buffer.from(bytes, 'latin1');
  const at = [...new Set(cuts.map((cut) => cut % (data.length + 1)))].sort((a, b) => a - b);
  let relayed = '';
  const relay = (part: Buffer | string): void =>
    void (relayed += typeof part === 'string' ? part : part.toString('latin1'));
  let from = 0;
  try {
    for (const to of [...at, data.length]) {
      if (to <= from) continue;
      const piece = data.subarray(from, to);
      from = to;
      const used = framer.feed(piece, relay);
      // As the fast path does: the connection goes back to the pool only when the read ended with the response.
      if (framer.done) {
        const reusable = used === piece.length && to === data.length && !framer.headParsed?.closes;
        return { kind: 'complete', relayed, reusable, untilClose: false };
      }
    }
  } catch (err) {
    if (err instanceof BackendProtocolError) return { kind: 'refused' };
    throw err;
  }
  return framer.end() ? { kind: 'complete', relayed, reusable: false, untilClose: true } : { kind: 'truncated' };
}

/**
 * The framer against Node's client on the same bytes (the backend closing after them): a response
 * the framer completes, Node's client reads completely too, and a visitor's Node client reading
 * what the framer relayed gets the same status, the same body, and no header Node did not read.
 */
async function checkResponse(
  { bytes, method }: Omit<GeneratedResponse, 'kind'>,
  cuts: readonly number[],
): Promise<Framed> {
  const framed = frame(bytes, method, cuts);
  if (framed.kind === 'refused') return framed;
  // A response the framer ended before the connection's close is followed by another: a Node
  // client that reads further takes it into its body, where the comparison below sees it.
  const node = await nodeClient.read(
    framed.kind === 'complete' && !framed.untilClose ? bytes + NEXT_RESPONSE : bytes,
    method,
  );
  if (framed.kind === 'truncated') {
    // Waiting for more than Node read: the next response on a pooled connection would end this one.
    expect(node.kind === 'refused' || !node.complete, 'Node read a whole response the framer waits to finish').toBe(
      true,
    );
    return framed;
  }
  expect(node, `Node refused or cut what the framer completed: ${JSON.stringify(node).slice(0, 200)}`).toMatchObject({
    kind: 'response',
    complete: true,
  });
  if (node.kind !== 'response') return framed;
  const visitor = await nodeClient.read(framed.relayed, method);
  expect(visitor, 'the visitor reads another response than Node did').toMatchObject({
    kind: 'response',
    complete: true,
    status: node.status,
    body: node.body,
  });
  if (visitor.kind !== 'response') return framed;
  const read = new Set(node.headers.map(([name, value]) => `${name}: ${value}`));
  const added = visitor.headers.filter(([name, value]) => name !== 'connection' && !read.has(`${name}: ${value}`));
  expect(added, 'headers the visitor got that Node did not read').toEqual([]);
  if (framed.reusable) expect(node.keepAlive, 'the framer reuses a connection Node would close').toBe(true);
  return framed;
}

describe('responses: the framer against Node’s client', () => {
  const tally = tallies('Response boundaries read as Node reads them or refused (502)', {
    'long lines, large heads, many header lines':
      'heads over 16 KiB (Node refuses) and of over 1000 lines (Node keeps 1000) were relayed',
    'Transfer-Encoding variants, and with Content-Length':
      '`chunked` followed by a tab was read as chunked (Node reads to the close)',
    'chunk sizes, extensions, data ends and trailers':
      'whitespace after a chunk size, an unterminated quoted extension and Content-Length in trailers were taken (Node refuses)',
    'HTTP/1.0 and Connection (keep-alive, close)':
      '`Connection: close` then `keep-alive` kept the backend connection (Node closes it)',
    '1xx, 204, 304 and HEAD responses with a body':
      'a HEAD response without a length kept the backend connection (Node closes it)',
  });

  it('ends each response where Node does, or refuses it (generated and mutated responses, split anywhere)', async () => {
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(responses, fc.array(fc.nat(400), { maxLength: 4 }), async (response, cuts) => {
        await tally(response.kind).run(async () => {
          const outcome = (await checkResponse(response, cuts)).kind;
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        });
      }),
      { numRuns: 1000 },
    );
    figures.measure(
      'framer outcomes of the generated responses',
      [...outcomes].map(([k, n]) => `${k}: ${n}`).join('; '),
    );
    expect(outcomes.get('complete')).toBeGreaterThan(0);
  });
});

describe('divergences found, kept as examples', () => {
  const tally = figures.attackClass(
    'Parser divergences found by the differential tests (kept as examples)',
    'the fast path took request heads of over 1000 header lines (Node answers 431); the framer relayed response heads over 16 KiB (Node refuses) and of over 1000 lines (Node keeps 1000), read `chunked<TAB>` as chunked (Node reads to the close), took chunk sizes with whitespace or an unterminated quoted extension and Content-Length in trailers (Node refuses), and kept a backend connection Node closes (HEAD answered without a length; `close` then `keep-alive`)',
  );
  const lines = (n: number): string => Array.from({ length: n }, (_, i) => `x${i.toString(36)}: ${i}\r\n`).join('');

  it('leaves to Node a request head of more header lines than Node allows', async () => {
    await tally.run(async () => {
      const head = `GET / HTTP/1.1\r\nHost: a.svc.localhost\r\n${lines(1000)}\r\n`;
      expect(parseRequestHead(head.slice(0, -4), SOCKET)).toBeUndefined();
      expect((await requests.read(head)).error).toBe('HPE_HEADER_OVERFLOW');
      expect(await checkRequest(`GET / HTTP/1.1\r\nHost: a.svc.localhost\r\n${lines(999)}\r\n`)).toBe('fast path');
    });
  });

  it.each([
    ['a head over 16 KiB', `HTTP/1.1 200 OK\r\nX-Large: ${'a'.repeat(20_000)}\r\nContent-Length: 2\r\n\r\nok`],
    ['more header lines than Node keeps', `HTTP/1.1 200 OK\r\n${lines(1000)}Content-Length: 2\r\n\r\nok`],
    ['whitespace after a chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3 ;a\r\nabc\r\n0\r\n\r\n'],
    [
      'an unterminated quoted chunk extension',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;a="b\r\nc\r\n0\r\n\r\n',
    ],
    [
      'Content-Length in the trailers',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n',
    ],
    ['`chunked` followed by a tab', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\t\r\n\r\n2\r\nok\r\n0\r\n\r\n'],
  ])('refuses a response with %s', async (_, bytes) => {
    await tally.run(async () => {
      expect((await checkResponse({ bytes, method: 'GET' }, [])).kind).toBe('refused');
    });
  });

  it.each([
    ['a HEAD response without a length', 'HEAD', 'HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n'],
    [
      '`close` then `keep-alive`',
      'GET',
      'HTTP/1.1 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok',
    ],
  ] as const)('does not reuse the backend connection after %s', async (_, method, bytes) => {
    await tally.run(async () => {
      expect(await checkResponse({ bytes, method }, [])).toMatchObject({ kind: 'complete', reusable: false });
    });
  });
});

describe('two visitors on one pooled backend connection', () => {
  let backend: TaggingBackend;
  let fe: TestFrontend;

  beforeAll(async () => {
    backend = await startTaggingBackend();
    fe = await startTestFrontend({
      providers: [UNREACHABLE_IDP1],
      shares: [
        { token: 'one', target: backend.url },
        { token: 'two', target: backend.url },
      ],
      limits: { backendTimeoutMs: 1_000 },
    });
  });
  afterAll(async () => {
    await fe?.close();
    await backend?.close();
  });

  const tally = figures.attackClass(
    'Two visitors on one pooled backend connection: no byte of one’s response reaches the other (bad lengths, both framings, extra bytes, 1xx and 101, HEAD, 204 and 304 with a body, close mid-body)',
  );
  // Well-behaved answers as often as the others, so that the pooled connection is often reused.
  const plans = fc.oneof(
    fc.constantFrom<Plan>('length', 'chunked', 'written in three pieces', '103 Early Hints first'),
    fc.constantFrom(...PLANS),
  );

  it('gives each visitor only its own responses, an error page, or a closed connection', async () => {
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(plans, fc.constantFrom<'GET' | 'HEAD'>('GET', 'GET', 'HEAD')), {
          minLength: 4,
          maxLength: 12,
        }),
        async (steps) => {
          const visitors = [new Visitor('A', fe, 'one'), new Visitor('B', fe, 'two')];
          try {
            for (const [i, [plan, method]] of steps.entries()) {
              const visitor = visitors[i % 2] as Visitor;
              const other = visitors[(i + 1) % 2] as Visitor;
              await tally.run(async () => {
                const reply = await visitor.send(plan, method);
                sent += 1;
                // Its own tag only, or none (an error page from the frontend), and never the other's.
                for (const tag of reply.tags) expect(tag, `${plan}: another request's bytes`).toBe(reply.tag);
                expect(visitor.received(), `${plan}: the other visitor's bytes`).not.toMatch(other.tagPattern);
              });
            }
          } finally {
            for (const visitor of visitors) visitor.close();
          }
        },
      ),
      { numRuns: 30 },
    );
    figures.measure(
      'two visitors: requests, backend connections opened',
      `${sent} requests, ${backend.connections()} connections`,
    );
    // The property is not empty: some requests did reuse a pooled connection.
    expect(backend.connections()).toBeLessThan(backend.requests());
  });
});

interface Reply {
  /** The tag this request carried. */
  readonly tag: string;
  /** Every tag in what the visitor received for it (head and body). */
  readonly tags: readonly string[];
}

/** A visitor on one kept-alive connection (a new one after the frontend closed it), every received byte kept. */
class Visitor {
  readonly tagPattern: RegExp;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private readonly tapped = new WeakSet<object>();
  private bytes = '';
  private sequence = 0;
  private readonly name: string;
  private readonly fe: TestFrontend;
  private readonly share: string;

  constructor(name: string, fe: TestFrontend, share: string) {
    this.name = name;
    this.fe = fe;
    this.share = share;
    this.tagPattern = new RegExp(`<${name}\\d+>`);
  }

  received(): string {
    return this.bytes;
  }

  send(plan: string, method: 'GET' | 'HEAD'): Promise<Reply> {
    this.sequence += 1;
    const tag = `<${this.name}${this.sequence}>`;
    const before = this.bytes.length;
    return new Promise((resolve) => {
      const done = (): void => resolve({ tag, tags: this.bytes.slice(before).match(/<[AB]\d+>/g) ?? [] });
      const req = request(
        {
          host: '127.0.0.1',
          port: this.fe.port,
          method,
          path: `/${encodeURIComponent(tag)}/${encodeURIComponent(plan)}`,
          agent: this.agent,
          headers: { host: this.fe.host(this.share) },
        },
        (res) => {
          res.resume();
          res.on('end', done);
          res.on('error', done);
          res.on('close', done);
        },
      );
      req.on('socket', (socket) => {
        if (this.tapped.has(socket)) return;
        this.tapped.add(socket);
        socket.on('data', (chunk: Buffer) => (this.bytes += chunk.toString('latin1')));
      });
      req.on('error', done);
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
