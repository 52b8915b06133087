import { describe, expect, it } from 'vitest';
import { problemText, type Result } from '../lib/errors.ts';
import {
  API_REQUEST_FIELDS,
  CLI_REQUEST_FIELDS,
  expectedStatusProblem,
  validateBindAddress,
  validateHealthCheckRequest,
} from './requests.ts';

const textsOf = (result: Result<unknown>): string[] => (result.ok ? [] : result.problems.map(problemText));

describe('validateHealthCheckRequest', () => {
  it('takes a path, a status code and a duration, 5s by default', () => {
    expect(validateHealthCheckRequest({ path: '/healthz?full=1', expectedStatus: 204 }, API_REQUEST_FIELDS)).toEqual({
      ok: true,
      value: { path: '/healthz?full=1', expectedStatus: 204, timeoutMs: 5_000 },
    });
    expect(
      validateHealthCheckRequest({ path: '/', expectedStatus: 200, timeout: '5m' }, API_REQUEST_FIELDS),
    ).toMatchObject({
      value: { timeoutMs: 300_000 },
    });
  });

  it('reports both limits at once, under the surface’s names', () => {
    expect(
      textsOf(validateHealthCheckRequest({ path: '/', expectedStatus: 42, timeout: 'soon' }, API_REQUEST_FIELDS)),
    ).toEqual([
      'expectedHttpResponse: must be an HTTP status code (100-599), got 42',
      'timeout: must be a duration such as 500ms, 5s or 1m, got "soon"',
    ]);
    expect(
      textsOf(validateHealthCheckRequest({ path: '/', expectedStatus: 200, timeout: '1h' }, CLI_REQUEST_FIELDS)),
    ).toEqual(['--timeout: must be between 1ms and 5m, got "1h"']);
    expect(
      textsOf(validateHealthCheckRequest({ path: '/', expectedStatus: 200.5, timeout: 5 }, API_REQUEST_FIELDS)),
    ).toEqual([
      'expectedHttpResponse: must be an HTTP status code (100-599), got 200.5',
      'timeout: must be a duration such as 500ms, 5s or 1m, got 5',
    ]);
  });

  it('refuses an endpoint that is not a plain path on the share’s backend', () => {
    for (const path of [
      'http://other-host/x',
      '//other-host/x',
      '@other-host',
      '\\\\other-host',
      'x',
      '/a b',
      '/a\u0000',
    ]) {
      expect(textsOf(validateHealthCheckRequest({ path, expectedStatus: 200 }, CLI_REQUEST_FIELDS)), path).toEqual([
        `<path>: must be a path on the share's backend, starting with a single / (got ${JSON.stringify(path)})`,
      ]);
    }
  });

  it('gives the CLI’s argument parser the same rule', () => {
    expect(expectedStatusProblem(599)).toBeUndefined();
    expect(expectedStatusProblem(600)).toBe('must be an HTTP status code (100-599), got 600');
    expect(expectedStatusProblem('ok')).toBe('must be an HTTP status code (100-599), got "ok"');
  });
});

describe('validateBindAddress', () => {
  it('takes ip:port; port 0 means any free port on one machine but names no Service port', () => {
    expect(validateBindAddress('127.0.0.1:0', API_REQUEST_FIELDS)).toEqual({
      ok: true,
      value: { host: '127.0.0.1', port: 0 },
    });
    expect(textsOf(validateBindAddress('here', CLI_REQUEST_FIELDS))).toEqual([
      '--bind: must be ip:port (for example 0.0.0.0:8080), got "here"',
    ]);
    expect(textsOf(validateBindAddress('0.0.0.0:0', API_REQUEST_FIELDS, { servicePort: true }))).toEqual([
      'bindAddress: must name a port 1-65535 (the access Service\'s port), got "0.0.0.0:0"',
    ]);
  });
});
