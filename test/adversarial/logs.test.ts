import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { suiteFigures } from '../support/figures.ts';
import { startTestFrontend, type TestFrontend } from '../support/frontend.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { startIdp1Server, type Idp1Server } from '../support/idp1-server.ts';
import { callback, startLogin } from '../support/oauth-flow.ts';

/**
 * Secrets never reach the logs: a frontend whose configuration holds a client secret and keys,
 * driven through logins, refused and tampered sessions, secret-bearing headers, an unreachable
 * backend and logouts, and the `svc frontend` process refusing configurations that hold secrets.
 * Every secret value is then looked for in everything written.
 */
const figures = suiteFigures('logs');
const SIGNING_KEY = 'log-suite-signing-key-5b0f9e6a1c2d3e4f';
const ENCRYPTION_KEY = 'log-suite-encryption-key-8d7c6b5a';
/** A secret sent in headers and cookies by the visitor: it must not be logged either. */
const HEADER_SECRET = 'visitor-header-secret-3e9d1f';
let idp1: Idp1Server;
let backend: EchoBackend;
let fe: TestFrontend;

beforeAll(async () => {
  [idp1, backend] = await Promise.all([startIdp1Server(), startEchoBackend()]);
  fe = await startTestFrontend({
    providers: [idp1.providerConfig('idp1')],
    oauth: { signing_key: SIGNING_KEY, encryption_key: ENCRYPTION_KEY },
    shares: [
      { token: 'app', target: backend.url.href, oauth_provider: 'idp1' },
      { token: 'down', target: 'http://127.0.0.1:9/', oauth_provider: 'idp1' },
      { token: 'open', target: 'http://127.0.0.1:9/' },
    ],
  });
  idp1.redirectUris = [`http://${fe.authHost}/idp1/auth/callback`];
});

afterAll(async () => {
  figures.write();
  await fe?.close();
  await Promise.all([idp1?.close(), backend?.close()]);
});

/** Headers a visitor (or an attacker) sends with secrets in them, under the names svc uses. */
const secretHeaders = (session: string): Record<string, string> => ({
  cookie: `${session}; other=${HEADER_SECRET}`,
  authorization: `Bearer ${HEADER_SECRET}`,
  'x-frontend-token': HEADER_SECRET,
  'svc-peer-credential': HEADER_SECRET,
  'x-environment-token': HEADER_SECRET,
});

async function login(token: string): Promise<string> {
  const { authorizeUrl, loginCookie } = await startLogin(fe, token);
  const done = await callback(fe, await idp1.authorize(authorizeUrl), loginCookie);
  expect(done.status).toBe(302);
  return cookiesFrom(done);
}

describe('secrets in logs', () => {
  const tally = figures.attackClass(
    'Secrets in logs (client secret, keys, provider tokens, session cookies, secret headers, configuration errors)',
    'the logger redacted a dozen exact lower-case names: clientSecret, signingKey, accessToken, refreshToken, x-frontend-token and svc-peer-credential were written in clear; a YAML syntax error quoted the lines around it and a secret written as digits was echoed in the error',
  );
  const sessions: string[] = [];

  it('a frontend driven through logins, secret headers, tampered cookies, failures and logouts logs none', () =>
    tally.run(async () => {
      const session = await login('app');
      sessions.push(session);
      for (const share of ['app', 'down', 'open']) {
        await get(fe.port, fe.host(share), '/', { headers: secretHeaders(session) });
      }
      const tampered = session.replace(/=(.)/, (_, c: string) => `=${c === 'A' ? 'B' : 'A'}`);
      expect((await get(fe.port, fe.host('app'), '/', { headers: secretHeaders(tampered) })).status).toBe(302);
      // A refused token exchange, then a logout whose revocation fails, then one that succeeds.
      idp1.tokenFailure = { status: 401, body: { error: 'invalid_client' } };
      const { authorizeUrl, loginCookie } = await startLogin(fe, 'app');
      expect((await callback(fe, await idp1.authorize(authorizeUrl), loginCookie)).status).toBeGreaterThanOrEqual(400);
      idp1.tokenFailure = undefined;
      idp1.revokeStatus = 500;
      await get(fe.port, fe.authHost, '/idp1/logout', { headers: secretHeaders(session) });
      idp1.revokeStatus = undefined;
      const again = await login('app');
      sessions.push(again);
      await get(fe.port, fe.authHost, '/idp1/logout', { headers: secretHeaders(again) });

      const secrets = [
        idp1.clientSecret,
        SIGNING_KEY,
        ENCRYPTION_KEY,
        HEADER_SECRET,
        ...idp1.issuedTokens,
        ...sessions.map((s) => s.split('=')[1] ?? ''),
      ];
      expect(fe.logs.lines.length).toBeGreaterThan(5);
      for (const secret of secrets) expect(fe.logs.text).not.toContain(secret);
      figures.measure('frontend log lines searched for secrets', fe.logs.lines.length);
      figures.measure('secret values looked for in them', secrets.length);
    }));

  const svcBin = join(import.meta.dirname, '../../bin/svc.js');
  const run = promisify(execFile);
  /** `svc frontend` on a file; its exit code and everything it wrote. */
  async function frontendOn(text: string): Promise<{ code: number; output: string }> {
    const path = join(mkdtempSync(join(tmpdir(), 'svc-logs-')), 'frontend.yaml');
    writeFileSync(path, text);
    try {
      const { stdout, stderr } = await run(process.execPath, [svcBin, 'frontend', '--config', path], {
        timeout: 20_000,
      });
      return { code: 0, output: stdout + stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
    }
  }
  const config = (providerLines: string): string => `
oauth:
  bind_address: "127.0.0.1:0"
  endpoint_url: "http://auth.svc.localhost:1"
  cookie_name: "svc-auth-session"
  cookie_domain: "svc.localhost"
  session_lifetime: "6h"
  intermediate_lifetime: "5m"
  signing_key: "${SIGNING_KEY}"
  encryption_key: "${ENCRYPTION_KEY}"
  providers:
${providerLines}
shares: []
`;

  const refused: [string, string, string][] = [
    [
      'a YAML syntax error next to the client secret',
      config('    - name: corp\n      type: idp1\n    client_secret: yaml-quoted-secret-71c2: oops'),
      'yaml-quoted-secret-71c2',
    ],
    [
      'a client secret written unquoted as digits',
      config('    - name: corp\n      type: idp1\n      client_id: id\n      client_secret: 31415926535897932'),
      '31415926535897932',
    ],
  ];
  it.each(refused)('svc frontend refusing %s writes no secret', (_what, text, secret) =>
    tally.run(async () => {
      const { code, output } = await frontendOn(text);
      expect(code).toBe(1);
      expect(output).toContain('invalid configuration in');
      for (const value of [secret, SIGNING_KEY, ENCRYPTION_KEY]) expect(output).not.toContain(value);
    }),
  );
});
