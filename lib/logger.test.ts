import { Writable } from 'node:stream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, SvcError } from './errors.ts';
import { CENSOR, createLogger } from './logger.ts';
import { isSecretName } from './secret-names.ts';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[]; raw: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      text += chunk.toString();
      callback();
    },
  });
  const lines = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stream, lines, raw: () => text };
}

afterEach(() => vi.unstubAllEnvs());

describe('createLogger', () => {
  it('writes one JSON object a line in pino’s format, fields between the fixed part and msg', () => {
    const out = capture();
    const log = createLogger('svc-test', { destination: out.stream });
    log.info({ share: 'abc', count: 3 }, 'share created');
    log.warn('plain message');
    const [first, second] = out.lines();
    expect(first).toMatchObject({ level: 30, pid: process.pid, name: 'svc-test', share: 'abc', count: 3 });
    expect(first?.msg).toBe('share created');
    expect(typeof first?.time).toBe('number');
    expect(typeof first?.hostname).toBe('string');
    expect(second).toMatchObject({ level: 40, msg: 'plain message' });
    expect(out.raw().endsWith('\n')).toBe(true);
  });

  it('drops calls under the threshold, from the option or SVC_LOG_LEVEL', () => {
    const out = capture();
    const log = createLogger('t', { level: 'warn', destination: out.stream });
    log.debug('no');
    log.info('no');
    log.error('yes');
    expect(out.lines().map((l) => l.msg)).toEqual(['yes']);

    vi.stubEnv('SVC_LOG_LEVEL', 'debug');
    const env = capture();
    createLogger('t', { destination: env.stream }).debug('seen');
    expect(env.lines()).toMatchObject([{ level: 20, msg: 'seen' }]);

    const silent = capture();
    const quiet = createLogger('t', { level: 'silent', destination: silent.stream });
    quiet.fatal('never');
    expect(silent.raw()).toBe('');
  });

  it('refuses an unknown level, naming it and where it came from', () => {
    expect(() => createLogger('t', { level: 'loud' })).toThrow(/level: unknown log level "loud"/);
    vi.stubEnv('SVC_LOG_LEVEL', 'verbose');
    expect(() => createLogger('t')).toThrow(ConfigError);
    expect(() => createLogger('t')).toThrow(
      /invalid configuration in the environment:\n {2}- SVC_LOG_LEVEL: unknown log level "verbose" \(one of trace, debug/,
    );
  });

  it('censors secret-named fields at any depth and keeps the value out of the line', () => {
    const out = capture();
    const log = createLogger('t', { destination: out.stream });
    const secret = 's3cr3t-value-that-must-not-appear';
    log.info(
      {
        client_secret: secret,
        req: { headers: { cookie: `svc_session=${secret}`, Authorization: `Bearer ${secret}`, 'x-token': secret } },
        nested: { deeper: { refresh_token: secret, id_token: secret, token: secret } },
        share: 'public-name',
      },
      'with secrets',
    );
    expect(out.raw()).not.toContain(secret);
    const [line] = out.lines();
    expect(line).toMatchObject({
      client_secret: CENSOR,
      req: { headers: { cookie: CENSOR, Authorization: CENSOR, 'x-token': CENSOR } },
      nested: { deeper: { refresh_token: CENSOR, id_token: CENSOR, token: CENSOR } },
      share: 'public-name',
    });
  });

  it('censors by normalised name and suffix: camelCase, prefixed and header spellings, plurals', () => {
    const out = capture();
    const log = createLogger('t', { destination: out.stream });
    const secret = 'another-secret-value-4f1c';
    const secretNames = [
      'clientSecret', 'signingKey', 'accessToken', 'refreshToken', 'encryptionKey', 'CLIENT-SECRET', 'Signing_Key',
      'x-frontend-token', 'X-Frontend-Token', 'svc-peer-credential', 'Set-Cookie', 'Proxy-Authorization',
      'x_api_key', 'db.password', 'apiKeys', 'cookies', 'credentials',
    ]; // prettier-ignore
    log.warn(Object.fromEntries(secretNames.map((name) => [name, secret])), 'flat');
    const [flat] = out.lines();
    for (const name of secretNames) expect(flat?.[name], name).toBe(CENSOR);
    expect(out.raw()).not.toContain(secret);
    for (const name of secretNames) expect(isSecretName(name), name).toBe(true);
  });

  it('censors at any depth: arrays, headers objects, Maps, Headers, rawHeaders, error causes', () => {
    const out = capture();
    const log = createLogger('t', { destination: out.stream });
    const secret = 'deep-secret-value-9a7e';
    log.error(
      {
        peers: [{ url: 'https://peer', credential: secret }, [{ accessToken: secret }]],
        req: { headers: { 'x-frontend-token': secret, 'svc-peer-credential': secret, accept: 'text/html' } },
        map: new Map([
          ['clientSecret', secret],
          ['provider', 'corp'],
        ]),
        fetched: new Headers({ authorization: `Bearer ${secret}`, 'content-type': 'application/json' }),
        rawHeaders: ['Host', 'a.example', 'X-Frontend-Token', secret, 'Cookie', `svc=${secret}`],
        err: new SvcError('agent_error', 'refused', { cause: { request: { headers: { cookie: secret } } } }),
      },
      'nested',
    );
    expect(out.raw()).not.toContain(secret);
    expect(out.lines()[0]).toMatchObject({
      peers: [{ url: 'https://peer', credential: CENSOR }, [{ accessToken: CENSOR }]],
      req: { headers: { 'x-frontend-token': CENSOR, 'svc-peer-credential': CENSOR, accept: 'text/html' } },
      map: { clientSecret: CENSOR, provider: 'corp' },
      fetched: { authorization: CENSOR, 'content-type': 'application/json' },
      rawHeaders: ['Host', 'a.example', 'X-Frontend-Token', CENSOR, 'Cookie', CENSOR],
      err: { cause: { request: { headers: { cookie: CENSOR } } } },
    });
  });

  it('keeps the fields logged on purpose whose names only look like secrets', () => {
    const out = capture();
    const log = createLogger('t', { destination: out.stream });
    const kept = {
      share: 'abc123',
      access: 'def456',
      secretRef: 'svc-system/svc-oauth',
      oauthShares: 2,
      tokenEndpoint: 'https://idp/token',
      keyId: 'k1',
      cookieDomain: 'svc.example',
      providers: ['corp'],
    };
    log.info(kept, 'kept');
    expect(out.lines()[0]).toMatchObject(kept);
    for (const name of Object.keys(kept)) expect(isSecretName(name), name).toBe(false);
  });

  it("writes an error's code and cause chain (SvcError's code, Node's system error code), bounded", () => {
    const out = capture();
    const log = createLogger('t', { destination: out.stream });
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    const err = new SvcError('agent_error', 'cannot reach the backend', { status: 502, cause: refused });
    const cycle = new Error('loops');
    cycle.cause = cycle;
    log.error({ err, cycle }, 'failed');
    const [line] = out.lines();
    expect(line?.err).toEqual({
      type: 'SvcError',
      message: 'cannot reach the backend',
      code: 'agent_error',
      cause: { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:9', code: 'ECONNREFUSED' },
    });
    expect(JSON.stringify(line?.cycle).match(/loops/g)).toHaveLength(5);
  });

  it('never throws: a cycle is noted, errors and bigints are written as text, fixed names are not overwritten', () => {
    const out = capture();
    const log = createLogger('svc-real', { destination: out.stream });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => log.error(cyclic, 'cycle')).not.toThrow();
    log.error({ err: new TypeError('bad thing'), big: 10n, name: 'spoofed', level: 99 }, 'fields');
    const [cycle, fields] = out.lines();
    expect(cycle).toMatchObject({ level: 50, logError: 'fields could not be serialised', msg: 'cycle' });
    expect(fields).toMatchObject({ level: 50, name: 'svc-real', err: { type: 'TypeError', message: 'bad thing' } });
    expect(fields?.big).toBe('10');
    const fieldsLine = out.raw().split('\n')[1] ?? '';
    expect(fieldsLine.match(/"name"/g)).toHaveLength(1);
    expect(fieldsLine.match(/"level"/g)).toHaveLength(1);
  });
});
