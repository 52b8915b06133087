import fc from 'fast-check';

/**
 * Generated HTTP/1.1 request heads and responses, valid ones and the mutations that parsers have
 * been known to read differently (RFC 9112 §2.2, §6.3, §7.1; the request-smuggling literature):
 * bare LF, a lone CR, obs-fold, whitespace before a colon, repeated or malformed framing headers,
 * control and non-ASCII bytes, lines near the size limit. Every text is Latin-1 (one char, one byte).
 */
export interface Generated {
  /** The mutation class, a row of the figures. */
  readonly kind: string;
  readonly bytes: string;
}

/** Node's default limit on a head (`--max-http-header-size`). */
const NODE_HEAD_LIMIT = 16 * 1024;

const TOKEN = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,12}$/);
const VALUE = fc.oneof(
  fc.constantFrom('text/html', 'a=1; b=2', '*/*', 'gzip, br', '', 'x y', '"quoted, value"'),
  fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,24}$/),
);
/** Bytes that a parser may take for a separator, a terminator or nothing. */
const ODD_BYTES = ['\x00', '\x01', '\x0b', '\x0c', '\x7f', '\x80', '\xa0', '\xff', '\t', ' ', '\r', '\n', ':', ';'];

/** Where in `text` to change something: a fraction of its length. */
const AT = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });

function insertAt(text: string, fraction: number, insert: string, replace = 0): string {
  const at = Math.floor(fraction * text.length);
  return text.slice(0, at) + insert + text.slice(at + replace);
}

/** A browser-like request head as lines (request line first), without line ends. */
const REQUEST_LINES = fc
  .record({
    method: fc.constantFrom('GET', 'HEAD'),
    target: fc.constantFrom('/', '/a/b?c=d', '/%2e%2e/x', '/a#frag', "/!$&'()*+,;=:@", '/~u/?q=a%20b', '//a'),
    headers: fc.uniqueArray(fc.tuple(TOKEN, VALUE), {
      selector: ([name]) => name.toLowerCase(),
      maxLength: 6,
    }),
    hostAt: fc.nat(6),
  })
  .map(({ method, target, headers, hostAt }) => {
    const fields = headers
      .filter(([name]) => !/^(host|content-length|transfer-encoding|connection)$/i.test(name))
      .map(([name, value]) => `${name}: ${value}`);
    fields.splice(Math.min(hostAt, fields.length), 0, 'Host: a.svc.localhost');
    return [`${method} ${target} HTTP/1.1`, ...fields];
  });

const join = (lines: readonly string[]): string => `${lines.join('\r\n')}\r\n\r\n`;

/** A line of `lines` (never the first when `header`) chosen by `fraction`. */
function pick(lines: readonly string[], fraction: number, header = true): number {
  const from = header && lines.length > 1 ? 1 : 0;
  return from + Math.floor(fraction * (lines.length - from));
}

const requestLineMutations = fc.constantFrom(
  'get / HTTP/1.1',
  'GET  / HTTP/1.1',
  'GET / HTTP/1.1 ',
  'GET /  HTTP/1.1',
  'GET\t/ HTTP/1.1',
  ' GET / HTTP/1.1',
  'GET http://a.svc.localhost/ HTTP/1.1',
  'GET * HTTP/1.1',
  'OPTIONS * HTTP/1.1',
  'GET / HTTP/1.0',
  'GET / HTTP/1.2',
  'GET / HTTP/2.0',
  'GET / http/1.1',
  'GET / HTTP/1.1\x00',
  'GET /\x7f HTTP/1.1',
  'GET /\x80 HTTP/1.1',
  'GET /\xff HTTP/1.1',
  'GET /a\x00b HTTP/1.1',
  'GET /a\tb HTTP/1.1',
  'GET /a b HTTP/1.1',
  'GET /"<>{}|\\^` HTTP/1.1',
  'GET ?x HTTP/1.1',
  'GET',
  'GET /',
  'POST / HTTP/1.1',
  'PRI * HTTP/2.0',
  'CONNECT a:443 HTTP/1.1',
  'HEAD /%00 HTTP/1.1',
  'GETT / HTTP/1.1',
  'G\x00T / HTTP/1.1',
);

const nameMutations = fc.constantFrom(
  'Host : a',
  'Host\t: a',
  ' Host: a',
  'Ho st: a',
  'Host:: a',
  ': a',
  'Host;: a',
  'Host\x00: a',
  'H\xe9st: a',
  'X-A : 1',
  'X-A\t: 1',
  '"X": 1',
  'X(A): 1',
  'X/A: 1',
);

/** Header lines that concern a body or the connection; `+body` ones are followed by a body. */
const framingLines = fc.constantFrom(
  'Content-Length: 0',
  'Content-Length: 5+body',
  'Content-Length: 05+body',
  'Content-Length: +5+body',
  'Content-Length: -1',
  'Content-Length: 5, 5+body',
  'Content-Length: 5,5+body',
  'Content-Length: 1e3',
  'Content-Length: 99999999999999999999',
  'Content-Length: 0x5+body',
  'Content-Length:  5 +body',
  'Content_Length: 5+body',
  'Content-Length\t: 5+body',
  'Transfer-Encoding: chunked+chunked',
  'Transfer-Encoding: Chunked+chunked',
  'Transfer-Encoding: chunked +chunked',
  'Transfer-Encoding: gzip, chunked+chunked',
  'Transfer-Encoding: chunked, gzip+chunked',
  'Transfer-Encoding: xchunked+chunked',
  'Transfer_Encoding: chunked+chunked',
  'Transfer-Encoding: identity',
  'Connection: close',
  'Connection: Close',
  'Connection: keep-alive',
  'Connection: Keep-Alive',
  'Connection: keep-alive, close',
  'Connection: upgrade',
  'Connection: keep-alive, x-secret',
  'Connection: te',
  'Keep-Alive: timeout=5',
  'Upgrade: websocket',
  'Expect: 100-continue',
  'TE: trailers',
  'Trailer: x',
  'HTTP2-Settings: AAMAAABkAAQAAP__',
  'Proxy-Connection: keep-alive',
);

/** Request heads, valid and mutated, each with its class; a second, plain request follows each. */
export const requestHeads: fc.Arbitrary<Generated> = fc.oneof(
  REQUEST_LINES.map((lines) => ({ kind: 'valid browser-style heads', bytes: join(lines) })),
  fc.tuple(REQUEST_LINES, requestLineMutations).map(([lines, line]) => ({
    kind: 'request line (method, target, version, spacing, bytes)',
    bytes: join([line, ...lines.slice(1)]),
  })),
  fc.tuple(REQUEST_LINES, AT, fc.constantFrom('\n', '\r', '\r\r\n', '\n\r', '\r \n')).map(([lines, at, end]) => {
    const i = pick(lines, at, false);
    return {
      kind: 'bare LF, CR without LF',
      bytes: join([...lines.slice(0, i), `${lines[i]}${end}${lines[i + 1] ?? 'X-End: 1'}`, ...lines.slice(i + 2)]),
    };
  }),
  fc.tuple(REQUEST_LINES, AT, fc.constantFrom(' folded', '\tfolded', ' ', '\t')).map(([lines, at, fold]) => {
    const i = pick(lines, at);
    return { kind: 'obs-fold', bytes: join([...lines.slice(0, i + 1), fold, ...lines.slice(i + 1)]) };
  }),
  fc.tuple(REQUEST_LINES, AT, nameMutations).map(([lines, at, line]) => ({
    kind: 'whitespace or bytes in a name, before the colon',
    bytes: join([...lines.slice(0, pick(lines, at)), line, ...lines.slice(pick(lines, at))]),
  })),
  fc
    .tuple(REQUEST_LINES, fc.constantFrom('Host: b.svc.localhost', 'host: a.svc.localhost', 'HOST: a', 'X-A: 1'))
    .map(([lines, extra]) => ({
      kind: 'repeated headers',
      bytes: join([...lines, 'X-A: 0', extra]),
    })),
  fc.tuple(REQUEST_LINES, fc.array(framingLines, { minLength: 1, maxLength: 3 })).map(([lines, extras]) => {
    const body = extras.some((line) => line.endsWith('+chunked'))
      ? '5\r\nhello\r\n0\r\n\r\n'
      : extras.some((line) => line.endsWith('+body'))
        ? 'hello'
        : '';
    const fields = extras.map((line) => line.replace(/\+(body|chunked)$/, ''));
    return {
      kind: 'body and connection headers (CL, TE, Connection, Upgrade, Expect)',
      bytes: join([...lines, ...fields]) + body,
    };
  }),
  fc.tuple(REQUEST_LINES, AT, fc.constantFrom(...ODD_BYTES)).map(([lines, at, byte]) => {
    const head = join(lines);
    // Anywhere but in the final blank line, which would end the head early.
    return { kind: 'control, NUL and non-ASCII bytes', bytes: insertAt(head.slice(0, -4), at, byte) + '\r\n\r\n' };
  }),
  fc
    .tuple(REQUEST_LINES, fc.integer({ min: -12, max: 12 }), fc.constantFrom('value', 'lines'))
    .map(([lines, delta, shape]) => {
      const head = join(lines);
      if (shape === 'value') {
        // One long header that puts the head `delta` bytes either side of Node's limit.
        const filler = NODE_HEAD_LIMIT + delta - head.length - 'X-Long: \r\n'.length;
        return {
          kind: 'long lines and heads near 16 KiB',
          bytes: join([...lines, `X-Long: ${'a'.repeat(Math.max(0, filler))}`]),
        };
      }
      // Many short distinct headers, `delta` either side of the 1000 lines Node's parser allows.
      const many = Array.from({ length: 999 + delta }, (_, i) => `x${i.toString(36)}:`);
      return { kind: 'long lines and heads near 16 KiB', bytes: join([...lines, ...many]) };
    }),
  fc
    .tuple(REQUEST_LINES, fc.constantFrom('', 'Connection: keep-alive', 'Connection: close'))
    .map(([lines, connection]) => ({
      kind: 'HTTP/1.0 with and without keep-alive',
      bytes: join([
        (lines[0] as string).replace('HTTP/1.1', 'HTTP/1.0'),
        ...lines.slice(1),
        ...(connection ? [connection] : []),
      ]),
    })),
);

/** A generated response and the method of the request it answers. */
export interface GeneratedResponse extends Generated {
  readonly method: 'GET' | 'HEAD';
}

interface ResponseParts {
  readonly statusLine: string;
  readonly fields: readonly string[];
  /** The body as sent, framing included. */
  readonly body: string;
  /** Bytes after the response. */
  readonly tail: string;
  readonly method: 'GET' | 'HEAD';
  readonly plain: string;
}

const serialize = (kind: string, p: ResponseParts): GeneratedResponse => ({
  kind,
  method: p.method,
  bytes: `${p.statusLine}\r\n${p.fields.map((field) => `${field}\r\n`).join('')}\r\n${p.body}${p.tail}`,
});

/** `body` as chunks cut at `cuts`. */
function chunked(body: string, cuts: readonly number[]): string[] {
  const at = [...new Set(cuts.map((cut) => cut % (body.length + 1)))].sort((a, b) => a - b);
  const pieces: string[] = [];
  let from = 0;
  for (const cut of [...at, body.length]) {
    if (cut > from) pieces.push(body.slice(from, cut));
    from = Math.max(from, cut);
  }
  return pieces.map((piece) => `${piece.length.toString(16)}\r\n${piece}\r\n`);
}

const FRAMING_NAMES = /^(content-length|transfer-encoding|connection|keep-alive|upgrade|te|trailer)$/i;

/** A well-formed response: a length, chunks or the connection's close frames its body. */
const BASE_RESPONSE = fc
  .record({
    framing: fc.constantFrom('length', 'chunked', 'close'),
    plain: fc.string({
      unit: fc.integer({ min: 0, max: 0xff }).map((code) => String.fromCharCode(code)),
      maxLength: 40,
    }),
    cuts: fc.array(fc.nat(40), { maxLength: 3 }),
    fields: fc.uniqueArray(fc.tuple(TOKEN, VALUE), { selector: ([name]) => name.toLowerCase(), maxLength: 4 }),
    method: fc.constantFrom<'GET' | 'HEAD'>('GET', 'GET', 'GET', 'HEAD'),
    connection: fc.constantFrom('', '', 'Connection: keep-alive', 'Connection: close'),
  })
  .map(({ framing, plain, cuts, fields, method, connection }): ResponseParts & { framing: string; cuts: number[] } => {
    const lines = fields.filter(([name]) => !FRAMING_NAMES.test(name)).map(([name, value]) => `${name}: ${value}`);
    if (connection) lines.push(connection);
    if (framing === 'length') lines.push(`Content-Length: ${plain.length}`);
    if (framing === 'chunked') lines.push('Transfer-Encoding: chunked');
    const body = framing === 'chunked' ? `${chunked(plain, cuts).join('')}0\r\n\r\n` : plain;
    return { statusLine: 'HTTP/1.1 200 OK', fields: lines, body, tail: '', method, plain, framing, cuts };
  });

/** A response framed by Content-Length, for the classes that change that header. */
const LENGTH_RESPONSE = BASE_RESPONSE.filter((p) => p.framing === 'length');
const CHUNKED_RESPONSE = BASE_RESPONSE.filter((p) => p.framing === 'chunked');

const withoutFraming = (fields: readonly string[]): string[] =>
  fields.filter((field) => !/^(content-length|transfer-encoding):/i.test(field));

const statusLines = fc.constantFrom(
  'HTTP/1.1 200',
  'HTTP/1.1 200 ',
  'HTTP/1.1 404 Not Found',
  'HTTP/1.1 500 Internal Server Error',
  'HTTP/1.0 200 OK',
  'HTTP/1.2 200 OK',
  'HTTP/2 200',
  'HTTP/2.0 200 OK',
  'http/1.1 200 OK',
  'HTTP/1.1  200 OK',
  'HTTP/1.1 2000 OK',
  'HTTP/1.1 20 OK',
  'HTTP/1.1 099 OK',
  'HTTP/1.1 600 Odd',
  'HTTP/1.1 999 Odd',
  'HTTP/1.1 200 Ok\xe9',
  'HTTP/1.1 200 O\x00K',
  'HTTP/1.1 200 O\x7fK',
  'HTTP/1.1 200\tOK',
  'HTTP/1.1 200 OK ',
  ' HTTP/1.1 200 OK',
  'HTTP/1.1 +20 OK',
  'HTTP/1.1 2x0 OK',
  'ICY 200 OK',
  'HTTP/1.1 200 OK\r',
  'HTTP/1.1\t200 OK',
);

const contentLengths = (n: number): string[][] => [
  [`0${n}`],
  [`00${n}`],
  [`+${n}`],
  [`-${n}`],
  [`${n}, ${n}`],
  [`${n},${n}`],
  [`${n}, ${n + 1}`],
  [` ${n} `],
  [`${n} x`],
  [`0x${n.toString(16)}`],
  ['99999999999999999999'],
  ['18446744073709551616'],
  ['9007199254740993'],
  [''],
  [`${n}.0`],
  [`${n}\x00`],
  [`${n}`, `${n}`],
  [`${n}`, `${n + 1}`],
  [`${n + 1}`, `${n}`],
  [`${Math.max(0, n - 1)}`],
  [`${n + 1}`],
];

const transferEncodings = [
  ['Chunked'],
  ['CHUNKED'],
  ['chunked '],
  [' chunked'],
  ['\tchunked'],
  ['chunked\t'],
  ['gzip, chunked'],
  ['chunked, gzip'],
  ['gzip'],
  ['identity'],
  ['identity, chunked'],
  ['chunked, chunked'],
  ['chunked;q=1'],
  ['xchunked'],
  ['chunked,'],
  [',chunked'],
  ['chunk'],
  ['ch\x00unked'],
  ['chunked\x0b'],
  ['gzip', 'chunked'],
  ['chunked', 'gzip'],
  ['chunked', 'chunked'],
];

const chunkSizes = (size: number): string[] => {
  const hex = size.toString(16);
  return [
    `0${hex}`,
    `0x${hex}`,
    ` ${hex}`,
    `${hex} `,
    `${hex}\t`,
    `+${hex}`,
    `-${hex}`,
    `${hex};`,
    `${hex};a=b`,
    `${hex}; a=b`,
    `${hex};a="b c"`,
    `${hex};a="b`,
    `${hex} ;a`,
    `${hex};a=\x00`,
    `${hex};a=\xe9`,
    'g',
    '',
    `${'0'.repeat(20)}${hex}`,
    'fffffffffffffffff',
    (size + 1).toString(16),
    Math.max(0, size - 1).toString(16),
    hex.toUpperCase(),
    `${hex}\r`,
  ];
};

const chunkEnds = ['', '\n', 'x', '\r', '\r\nX-T: 1', '\r\r\n'];
const trailers = [
  'X-T: 1',
  'X-T : 1',
  'X-T:\x00',
  ' folded',
  'Content-Length: 5',
  'X-T: 1\n',
  'X-T: \xe9',
  ':x',
  'X-T',
];

/** Line-level mutations of a head: where a line ends, folds, or a name meets its colon. */
const lineMutations = fc.constantFrom(
  (line: string) => `${line}\n`,
  (line: string) => `${line}\rX-After: 1`,
  (line: string) => `${line}\r\n folded`,
  (line: string) => `${line}\r\n\tfolded`,
  (line: string) => line.replace(':', ' :'),
  (line: string) => line.replace(':', '\t:'),
  (line: string) => ` ${line}`,
  (line: string) => line.replace(':', ':\r\n '),
  (line: string) => `${line}\r\r`,
);

/** Responses, valid and mutated, each with its class and the method of its request. */
export const responses: fc.Arbitrary<GeneratedResponse> = fc.oneof(
  BASE_RESPONSE.map((p) => serialize('valid responses (length, chunked, close-delimited; GET and HEAD)', p)),
  fc
    .tuple(BASE_RESPONSE, statusLines)
    .map(([p, statusLine]) => serialize('status line (version, code, absent or odd reason)', { ...p, statusLine })),
  fc
    .tuple(
      BASE_RESPONSE,
      fc.constantFrom(100, 101, 102, 103, 199, 204, 205, 304),
      fc.constantFrom('', 'HTTP/1.1 100 Continue\r\n\r\n', 'HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n'),
      fc.constantFrom<'GET' | 'HEAD'>('GET', 'HEAD'),
    )
    .map(([p, code, interim, method]) =>
      serialize('1xx, 204, 304 and HEAD responses with a body', {
        ...p,
        method,
        statusLine: `${interim}HTTP/1.1 ${code} Status`,
      }),
    ),
  fc.tuple(LENGTH_RESPONSE, fc.nat(30)).map(([p, pick]) => {
    const variants = contentLengths(p.plain.length);
    const values = variants[pick % variants.length] as string[];
    return serialize('Content-Length with sign, zeros, commas, huge, repeated, wrong', {
      ...p,
      fields: [...withoutFraming(p.fields), ...values.map((value) => `Content-Length: ${value}`)],
    });
  }),
  fc.tuple(CHUNKED_RESPONSE, fc.nat(30), fc.constantFrom('', 'raw', 'plain')).map(([p, pick, length]) => {
    const values = transferEncodings[pick % transferEncodings.length] as string[];
    const lengths = length === 'raw' ? [p.body.length] : length === 'plain' ? [p.plain.length] : [];
    return serialize('Transfer-Encoding variants, and with Content-Length', {
      ...p,
      fields: [
        ...withoutFraming(p.fields),
        ...values.map((value) => `Transfer-Encoding: ${value}`),
        ...lengths.map((n) => `Content-Length: ${n}`),
      ],
    });
  }),
  fc.tuple(CHUNKED_RESPONSE, fc.nat(40), fc.constantFrom('size', 'end', 'trailer', 'last')).map(([p, pick, where]) => {
    const pieces = chunked(p.plain, p.cuts);
    let body: string;
    if (where === 'size' && pieces.length > 0) {
      const first = pieces[0] as string;
      const size = Number.parseInt(first, 16);
      const sizes = chunkSizes(size);
      body = `${sizes[pick % sizes.length]}${first.slice(first.indexOf('\r\n'))}${pieces.slice(1).join('')}0\r\n\r\n`;
    } else if (where === 'end' && pieces.length > 0) {
      const first = pieces[0] as string;
      body = `${first.slice(0, -2)}${chunkEnds[pick % chunkEnds.length]}${pieces.slice(1).join('')}0\r\n\r\n`;
    } else if (where === 'trailer') body = `${pieces.join('')}0\r\n${trailers[pick % trailers.length]}\r\n\r\n`;
    else body = `${pieces.join('')}${['00', '0;ext', '000000', '0 ', '0\r\n', '0\r\n\r'][pick % 6]}\r\n\r\n`;
    return serialize('chunk sizes, extensions, data ends and trailers', { ...p, body });
  }),
  fc.tuple(BASE_RESPONSE, AT, lineMutations).map(([p, at, mutate]) => {
    const i = Math.floor(at * p.fields.length);
    const fields = p.fields.map((field, j) => (j === i ? mutate(field) : field));
    return serialize('bare LF, CR without LF, obs-fold, whitespace before the colon', { ...p, fields });
  }),
  fc.tuple(BASE_RESPONSE, AT, fc.constantFrom(...ODD_BYTES)).map(([p, at, byte]) => {
    const head = `${p.statusLine}\r\n${p.fields.map((field) => `${field}\r\n`).join('')}`;
    return {
      kind: 'control, NUL and non-ASCII bytes in the head',
      method: p.method,
      bytes: `${insertAt(head.slice(0, -2), at, byte)}\r\n\r\n${p.body}`,
    };
  }),
  fc
    .tuple(BASE_RESPONSE, fc.integer({ min: -6, max: 6 }), fc.constantFrom(16 * 1024, 20_000, 64 * 1024, 1000))
    .map(([p, delta, size]) => {
      const head = `${p.statusLine}\r\n${p.fields.map((field) => `${field}\r\n`).join('')}\r\n`;
      const fields =
        size === 1000
          ? [...p.fields, ...Array.from({ length: 999 + delta }, (_, i) => `x${i.toString(36)}:`)]
          : [...p.fields, `X-Long: ${'a'.repeat(Math.max(0, size + delta - head.length - 10))}`];
      return serialize('long lines, large heads, many header lines', { ...p, fields });
    }),
  fc
    .tuple(
      BASE_RESPONSE,
      fc.constantFrom('HTTP/1.0 200 OK', 'HTTP/1.1 200 OK'),
      fc.array(
        fc.constantFrom(
          'close',
          'Close',
          'keep-alive',
          'Keep-Alive',
          'keep-alive, close',
          'close, keep-alive',
          'closed',
          'xclose',
          'close;',
          ' close ',
          ', close',
          'upgrade',
          'te, close',
          'content-length',
          'transfer-encoding, keep-alive',
        ),
        { maxLength: 2 },
      ),
    )
    .map(([p, statusLine, values]) =>
      serialize('HTTP/1.0 and Connection (keep-alive, close)', {
        ...p,
        statusLine,
        fields: [...p.fields.filter((f) => !/^connection:/i.test(f)), ...values.map((v) => `Connection: ${v}`)],
      }),
    ),
  fc.tuple(BASE_RESPONSE, fc.constantFrom('tail', 'response', 'cut'), fc.nat(8)).map(([p, what, n]) =>
    serialize('extra bytes after a response, close mid-body', {
      ...p,
      body: what === 'cut' ? p.body.slice(0, Math.max(0, p.body.length - 1 - n)) : p.body,
      tail:
        what === 'tail'
          ? 'x'.repeat(n + 1)
          : what === 'response'
            ? 'HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ntail'
            : '',
    }),
  ),
);
