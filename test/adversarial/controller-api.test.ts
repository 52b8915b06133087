import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { OpenApi } from '../../controller/openapi.ts';
import { startControllerFixture, type ControllerFixture } from '../support/controller-fixture.ts';
import { suiteFigures } from '../support/figures.ts';
import { request, type Reply } from '../support/raw-http.ts';

/**
 * The controller API under attack, as real processes (`svc controller` and an enrolled `svc serve`):
 * credentials, media type, size, nesting, types, unknown fields, another account's environment,
 * then property-based fuzzing of every endpoint. Every refusal is a documented 4xx with a JSON
 * error and no stack trace; no request changes the controller's or the agent's state.
 */
const figures = suiteFigures('controller-api');
const openapi = new OpenApi();
// The frontend replicas' operations are off on this controller (no public_frontend): 501 for any
// caller, checked on their own below; the fuzzer covers the operations it serves.
const OPERATIONS = openapi.operations().filter((op) => !op.startsWith('/frontend/'));
let fx: ControllerFixture;
let port: number;
let before: string;
let enrollmentToken: string;

beforeAll(async () => {
  fx = await startControllerFixture('svc-adv-api-');
  port = Number(new URL(fx.apiBase).port);
  enrollmentToken = (JSON.parse(readFileSync(join(fx.agentDir, 'agent-enrollment.json'), 'utf8')) as { token: string })
    .token;
  before = fx.state();
}, 120_000);

afterAll(async () => {
  figures.write();
  await fx?.stop();
});

interface Call {
  readonly path: string;
  readonly method?: string;
  readonly token?: string;
  readonly contentType?: string;
  readonly body?: string;
  readonly headers?: Record<string, string>;
}

/** One request sent exactly as given; the answer must be a documented, well-formed refusal or success. */
async function call(c: Call): Promise<Reply> {
  const reply = await request(port, c.path, {
    method: c.method ?? 'POST',
    headers: {
      ...(c.contentType === undefined
        ? { 'content-type': MEDIA_TYPE }
        : c.contentType
          ? { 'content-type': c.contentType }
          : {}),
      ...(c.token !== undefined ? { 'x-token': c.token } : {}),
      ...c.headers,
    },
    ...(c.body !== undefined ? { body: c.body } : {}),
  });
  expect(reply.body).not.toMatch(/\n\s+at /);
  if (reply.status >= 400 && c.method !== 'HEAD') {
    expect(reply.headers['content-type'], `${c.path} ${reply.status}`).toBe(MEDIA_TYPE);
    expect(JSON.parse(reply.body)).toMatchObject({
      code: expect.any(String) as unknown,
      message: expect.any(String) as unknown,
    });
  }
  const op = c.path.startsWith('/api/v1/') ? c.path.slice('/api/v1'.length) : '';
  if (OPERATIONS.includes(op) && (c.method ?? 'POST') === 'POST' && reply.status !== 404) {
    expect(
      openapi.validateResponse(op, reply.status, JSON.parse(reply.body)),
      `${op} ${reply.status} ${reply.body}`,
    ).toEqual([]);
  }
  return reply;
}

/** Whether `text` is a JSON body the operation's schema accepts. */
function isValidBody(op: string, text: string | undefined): boolean {
  try {
    return openapi.validateRequest(op, JSON.parse(text ?? '') as unknown).ok;
  } catch {
    return false;
  }
}

const codeOf = (reply: Reply): string => (JSON.parse(reply.body) as { code: string }).code;

describe('the control case', () => {
  it('alice’s own token and environment are served', async () => {
    const reply = await call({
      path: '/api/v1/agent/status',
      token: fx.alice,
      body: JSON.stringify({ envZId: fx.aliceEnv }),
    });
    expect(reply.status).toBe(200);
    expect(fx.state()).toBe(before);
  });
});

describe('credentials', () => {
  const tally = figures.attackClass('Controller API: missing or wrong X-TOKEN');
  const tokens: [string, () => string | undefined][] = [
    ['no X-TOKEN', () => undefined],
    ['an empty X-TOKEN', () => ''],
    ['whitespace', () => '   '],
    ['the prefix only', () => 'svca_'],
    ['a well-formed unknown token', () => 'svca_aaaaaaaaaaaa_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
    [
      'alice’s token with its last character changed',
      () => fx.alice.slice(0, -1) + (fx.alice.endsWith('A') ? 'B' : 'A'),
    ],
    [
      'alice’s id with bob’s secret',
      () => fx.alice.split('_').slice(0, 2).concat(fx.bob.split('_').slice(2)).join('_'),
    ],
    ['alice’s token truncated', () => fx.alice.slice(0, -5)],
    ['alice’s token with a suffix', () => `${fx.alice}x`],
    ['the agent’s enrollment token', () => enrollmentToken],
    ['alice’s token as "Bearer …"', () => `Bearer ${fx.alice}`],
  ];
  for (const op of ['/agent/status', '/agent/share', '/environment/enable', '/environment/disable', '/agent/enroll']) {
    it.each(tokens)(`${op}: %s is 401`, (_what, token) =>
      tally.run(async () => {
        const value = token();
        const reply = await call({
          path: `/api/v1${op}`,
          ...(value !== undefined ? { token: value } : {}),
          body: JSON.stringify({ envZId: fx.aliceEnv }),
        });
        expect(reply.status).toBe(401);
        expect(codeOf(reply)).toBe('unauthorized');
      }),
    );
  }

  it('two X-TOKEN headers, one of them valid, are refused', () =>
    tally.run(async () => {
      const reply = await request(port, '/api/v1/agent/status', {
        method: 'POST',
        headers: { 'content-type': MEDIA_TYPE, 'x-token': `${fx.alice}, ${fx.alice}` },
        body: JSON.stringify({ envZId: fx.aliceEnv }),
      });
      expect(reply.status).toBe(401);
    }));
});

describe('another account’s environment', () => {
  const tally = figures.attackClass('Controller API: another account’s envZId');
  const ops: [string, (env: string) => Record<string, unknown>][] = [
    ['/agent/ping', (envZId) => ({ envZId })],
    ['/agent/status', (envZId) => ({ envZId })],
    ['/agent/share', (envZId) => ({ envZId, shareMode: 'public', backendMode: 'proxy', target: 'http://127.0.0.1:9' })],
    ['/agent/unshare', (envZId) => ({ envZId, token: 'abcdefghijkl' })],
    ['/agent/access', (envZId) => ({ envZId, shareToken: 'abcdefghijkl' })],
    ['/agent/unaccess', (envZId) => ({ envZId, token: 'abcdefghijkl' })],
    [
      '/agent/share/http-healthcheck',
      (envZId) => ({ envZId, shareToken: 'abcdefghijkl', httpVerb: 'GET', endpoint: '/', expectedHttpResponse: 200 }),
    ],
    ['/agent/enroll', (envZId) => ({ envZId })],
    ['/agent/unenroll', (envZId) => ({ envZId })],
    ['/environment/disable', (envZId) => ({ envZId })],
  ];
  it.each(ops)('%s: bob cannot reach alice’s enrolled environment, nor alice bob’s', (op, body) =>
    tally.run(async () => {
      for (const [token, env] of [
        [fx.bob, fx.aliceEnv],
        [fx.alice, fx.bobEnv],
      ] as const) {
        const reply = await call({ path: `/api/v1${op}`, token, body: JSON.stringify(body(env)) });
        expect(reply.status, `${op} ${reply.body}`).toBe(401);
      }
      expect(fx.state()).toBe(before);
    }),
  );
});

describe('media type, size, shape', () => {
  const tally = figures.attackClass(
    'Controller API: media type, oversized and nested bodies, wrong types, unknown fields',
  );
  const status = { envZId: 'x' };

  it.each([
    ['no Content-Type', ''],
    ['application/json', 'application/json'],
    ['text/plain', 'text/plain'],
    ['another version', 'application/svc.v2+json'],
    ['another charset', `${MEDIA_TYPE}; charset=latin1`],
    ['a suffix', `${MEDIA_TYPE}x`],
    ['multipart', 'multipart/form-data; boundary=x'],
  ])('%s is 415', (_what, contentType) =>
    tally.run(async () => {
      const reply = await call({
        path: '/api/v1/agent/status',
        token: fx.alice,
        contentType,
        body: JSON.stringify(status),
      });
      expect(reply.status).toBe(415);
    }),
  );

  it('an oversized body is 413, with or without Content-Length', () =>
    tally.run(async () => {
      const big = JSON.stringify({ envZId: fx.aliceEnv, pad: 'x'.repeat(2 << 20) });
      expect((await call({ path: '/api/v1/agent/status', token: fx.alice, body: big })).status).toBe(413);
      const chunked = await call({
        path: '/api/v1/agent/status',
        token: fx.alice,
        body: big,
        headers: { 'transfer-encoding': 'chunked' },
      });
      expect(chunked.status).toBe(413);
    }));

  it.each([
    ['deeply nested arrays', (n: number) => '['.repeat(n) + ']'.repeat(n)],
    ['deeply nested objects in a field', (n: number) => `{"envZId":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`],
  ])('%s within the size limit are refused without a 5xx', (_what, make) =>
    tally.run(async () => {
      for (const depth of [100, 5_000, 20_000]) {
        const reply = await call({ path: '/api/v1/agent/status', token: fx.alice, body: make(depth) });
        expect([400, 413, 422]).toContain(reply.status);
      }
    }),
  );

  it.each([
    ['not JSON', '{envZId:'],
    ['a BOM first', `\ufeff${JSON.stringify(status)}`],
    ['an array', '[]'],
    ['a string', '"x"'],
    ['null', 'null'],
    ['NaN', '{"envZId": NaN}'],
    ['an empty body', ''],
  ])('%s is 400', (_what, body) =>
    tally.run(async () => {
      const reply = await call({ path: '/api/v1/agent/status', token: fx.alice, body });
      expect([400, 422]).toContain(reply.status);
    }),
  );

  it.each([
    ['envZId a number', '/agent/status', { envZId: 1 }],
    ['envZId an array', '/agent/status', { envZId: [fx?.aliceEnv] }],
    ['envZId an object', '/agent/status', { envZId: { $ne: null } }],
    [
      'expectedHttpResponse a string',
      '/agent/share/http-healthcheck',
      { envZId: 'e', shareToken: 'abcdefghijkl', httpVerb: 'GET', endpoint: '/', expectedHttpResponse: '200' },
    ],
    ['an unknown field', '/agent/status', { envZId: 'e', admin: true }],
    ['__proto__', '/agent/status', JSON.parse('{"envZId":"e","__proto__":{"admin":true}}') as object],
    ['constructor.prototype', '/agent/status', { envZId: 'e', constructor: { prototype: { admin: true } } }],
    [
      'shareMode not in the enum',
      '/agent/share',
      { envZId: 'e', shareMode: 'PUBLIC', backendMode: 'proxy', target: 'http://x' },
    ],
    [
      'a target of 5000 characters',
      '/agent/share',
      { envZId: 'e', shareMode: 'public', backendMode: 'proxy', target: `http://${'a'.repeat(5000)}` },
    ],
  ])('%s is 422 naming the field', (_what, op, body) =>
    tally.run(async () => {
      const reply = await call({ path: `/api/v1${op}`, token: fx.alice, body: JSON.stringify(body) });
      expect(reply.status).toBe(422);
      expect(codeOf(reply)).toBe('invalid_request');
      expect(({} as Record<string, unknown>).admin).toBeUndefined();
    }),
  );

  it('other methods are 405, unknown and look-alike paths 404', () =>
    tally.run(async () => {
      for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        expect((await call({ path: '/api/v1/agent/share', method, token: fx.alice })).status).toBe(405);
      }
      for (const path of [
        '/api/v1/agent/share/',
        '/API/V1/agent/share',
        '/api/v1/agent%2fshare',
        '/api/v1/../v1/agent/share',
        '/api/v2/agent/share',
        '/api/v1/agent/share%00',
      ]) {
        expect((await call({ path, token: fx.alice, body: '{}' })).status, path).toBe(404);
      }
    }));

  it('the frontend API is off without public_frontend: 501 tunnel_not_offered whatever the credential', () =>
    tally.run(async () => {
      for (const [path, method] of [
        ['/api/v1/frontend/registry', 'GET'],
        ['/api/v1/frontend/authenticate', 'POST'],
      ] as const) {
        for (const headers of [{}, { 'x-frontend-token': 'x'.repeat(40) }] as Record<string, string>[]) {
          const body = method === 'POST' ? { body: '{"environmentToken":"x"}' } : {};
          const reply = await call({ path, method, token: fx.alice, headers, ...body });
          expect(reply.status, path).toBe(501);
          expect(codeOf(reply)).toBe('tunnel_not_offered');
          expect(openapi.validateResponse(path.slice('/api/v1'.length), 501, JSON.parse(reply.body))).toEqual([]);
        }
      }
    }));

  it('nothing above changed any state', () => {
    expect(fx.state()).toBe(before);
  });
});

describe('property-based fuzzing of every endpoint', () => {
  const RUNS = 3_000;

  it(`${RUNS} generated requests: never a 5xx, the controller keeps serving, no state changes`, async () => {
    const statuses = new Map<number, number>();
    const jsonValue = fc.jsonValue({ maxDepth: 4 });
    const fieldValue = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }),
      fc.constantFrom('http://127.0.0.1:9', '/etc', '//evil', '../..', '\u0000', 'a'.repeat(300)),
    );
    const knownFields = fc.constantFrom(
      'envZId',
      'shareMode',
      'backendMode',
      'target',
      'token',
      'shareToken',
      'httpVerb',
      'endpoint',
      'expectedHttpResponse',
      'timeout',
      'bindAddress',
      'description',
      'host',
      'oauthProvider',
      'oauthEmailAddressPatterns',
      'oauthCheckInterval',
      'shares',
      '__proto__',
    );
    const envZId = fc.oneof(fc.constant('BOB'), fc.constant('ALICE'), fc.string({ maxLength: 20 }));
    const body = fc.oneof(
      // Schema-shaped: known field names with values of any type.
      fc
        .tuple(fc.dictionary(knownFields, fieldValue, { maxKeys: 6 }), envZId)
        .map(([o, env]) => ({ ...o, envZId: env })),
      jsonValue,
      fc.string({ maxLength: 200 }).map((s) => ({ raw: s })),
    );
    const generated = fc.record({
      op: fc.oneof(
        { weight: 8, arbitrary: fc.constantFrom(...OPERATIONS) },
        { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => `/${encodeURIComponent(s)}`) },
      ),
      method: fc.oneof(
        { weight: 9, arbitrary: fc.constant('POST') },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'DELETE', 'HEAD') },
      ),
      token: fc.constantFrom('alice', 'bob', 'none', 'garbage', 'enrollment'),
      contentType: fc.oneof(
        { weight: 9, arbitrary: fc.constant(MEDIA_TYPE) },
        { weight: 1, arbitrary: fc.constantFrom('', 'application/json', 'text/plain') },
      ),
      body,
    });

    await fc.assert(
      fc.asyncProperty(generated, async (r) => {
        const token = {
          alice: fx.alice,
          bob: fx.bob,
          none: undefined,
          garbage: 'svca_x_y',
          enrollment: enrollmentToken,
        }[r.token];
        // Each account is only ever pointed at the other's environment (or none): a request that
        // could legitimately change state is not part of this run.
        const ownEnv = r.token === 'alice' ? 'ALICE' : r.token === 'bob' ? 'BOB' : undefined;
        const swap = (value: unknown): unknown =>
          value === 'ALICE' ? fx.aliceEnv : value === 'BOB' ? fx.bobEnv : value;
        let payload: unknown = r.body;
        if (payload && typeof payload === 'object' && !Array.isArray(payload) && 'envZId' in payload) {
          const env = payload.envZId === ownEnv ? 'x' : payload.envZId;
          payload = { ...(payload as object), envZId: swap(env) };
        }
        const text =
          payload && typeof payload === 'object' && 'raw' in payload ? String(payload.raw) : JSON.stringify(payload);
        fc.pre(
          !(r.op === '/environment/enable' && token !== undefined && r.method === 'POST' && isValidBody(r.op, text)),
        );
        const reply = await call({
          path: `/api/v1${r.op}`,
          method: r.method,
          ...(token !== undefined ? { token } : {}),
          contentType: r.contentType,
          ...(r.method !== 'POST' && r.method !== 'PUT' ? {} : { body: text ?? '' }),
        });
        statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
        expect(reply.status, `${r.op} ${reply.body}`).toBeLessThan(500);
      }),
      { numRuns: RUNS, seed: 20261123 },
    );

    const total = [...statuses.values()].reduce((a, b) => a + b, 0);
    const errors5xx = [...statuses].filter(([s]) => s >= 500).reduce((a, [, n]) => a + n, 0);
    expect(total).toBeGreaterThan(RUNS * 0.9);
    expect(errors5xx).toBe(0);
    expect((await request(port, '/healthz')).status).toBe(200);
    expect(fx.controller.child.exitCode).toBeNull();
    expect(fx.agent.child.exitCode).toBeNull();
    expect(fx.state()).toBe(before);
    figures.attack({
      attack: 'Controller API: property-based fuzzing of every endpoint',
      tried: total,
      held: total - errors5xx,
      fixed: '',
    });
    figures.measure('fuzzed controller requests', total);
    figures.measure('fuzzed requests answered 5xx', errors5xx);
    figures.measure(
      'fuzzed requests by status',
      [...statuses]
        .sort(([a], [b]) => a - b)
        .map(([s, n]) => `${s}: ${n}`)
        .join(', '),
    );
  }, 300_000);
});
