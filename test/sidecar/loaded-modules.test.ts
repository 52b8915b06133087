import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startEchoBackend, type EchoBackend } from '../support/backend.ts';
import { openSharesConfig, spawnFrontend } from '../support/frontend-process.ts';
import { cookiesFrom, get } from '../support/http.ts';
import { mintSessionCookie } from '../support/session.ts';
import { startTestIssuer, TEST_CLIENT_ID, TEST_CLIENT_SECRET, type TestIssuer } from '../support/test-issuer.ts';

interface Loaded {
  builtins: string[];
  packages: string[];
  undici: boolean;
}

/** Runs `svc frontend` with the loaded-modules preload, lets `visit` use it, stops it, and returns its report. */
async function loadedWhile(file: string, visit: (port: number) => Promise<void>): Promise<Loaded> {
  const report = `${file}.loaded.json`;
  const { child, port } = await spawnFrontend(file, {
    execArgv: ['--import', join(import.meta.dirname, '../support/report-loaded-modules.ts')],
    env: { SVC_TEST_LOADED_MODULES: report },
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    await visit(port);
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
  return JSON.parse(readFileSync(report, 'utf8')) as Loaded;
}

/**
 * The sidecar's memory is mostly what it loads. A plain `svc frontend` (one open share,
 * an idp1 provider not yet used, no metrics listener, one process) serves a request and stops; what
 * it loaded is reported by a preload. Node's fetch (undici, which brings node:tls, node:http2 and
 * node:zlib) comes only with a provider request; metrics and logs are svc's own (no prom-client, no pino).
 * (node:cluster is not asserted: Node's own net.Server#listen loads it in every process.)
 */
describe('svc frontend loads only what it uses', () => {
  let backend: EchoBackend;
  let loaded: Loaded;
  const dir = mkdtempSync(join(tmpdir(), 'svc-loaded-'));

  beforeAll(async () => {
    backend = await startEchoBackend();
    const file = join(dir, 'frontend.yaml');
    writeFileSync(file, openSharesConfig(['one'], backend.url));
    loaded = await loadedWhile(file, async (port) => {
      expect((await get(port, 'one.svc.localhost:8080', '/')).status).toBe(200);
      expect((await get(port, '127.0.0.1', '/readyz')).status).toBe(200);
    });
  });
  afterAll(async () => {
    await backend?.close();
  });

  it('reports what it loaded (the report itself works)', () => {
    expect(loaded.builtins).toEqual(expect.arrayContaining(['http', 'crypto']));
    expect(loaded.packages).toEqual(expect.arrayContaining(['yaml']));
  });

  it('does not load undici (node:tls, node:http2, node:zlib) before a provider request', () => {
    expect(loaded.builtins.filter((m) => ['tls', 'http2', 'zlib', 'https'].includes(m))).toEqual([]);
  });

  it('loads no metrics or logging package, and so no worker thread support', () => {
    expect(loaded.packages.filter((p) => ['prom-client', 'pino', 'thread-stream'].includes(p))).toEqual([]);
    expect(loaded.builtins).not.toContain('worker_threads');
  });
});

/**
 * An `oidc` frontend logs a visitor in (discovery at start-up, key set, token exchange) over
 * node:http: Node's fetch would load undici and compile, then re-optimize, its WebAssembly HTTP
 * parser, 20-28 MiB of a sidecar's RSS (docs/benchmarks-history.md). The issuer is on loopback over http,
 * so no TLS either.
 */
describe('an oidc frontend configured as the operator does it logs in without loading fetch or YAML', () => {
  let backend: EchoBackend;
  let issuer: TestIssuer;
  let loaded: Loaded;
  let served: number;
  const dir = mkdtempSync(join(tmpdir(), 'svc-loaded-oidc-'));

  beforeAll(async () => {
    [backend, issuer] = await Promise.all([startEchoBackend(), startTestIssuer()]);
    const file = join(dir, 'frontend.yaml');
    // As the operator writes a share sidecar's config: JSON, which svc reads without its YAML parser.
    const yaml = openSharesConfig([], backend.url)
      .replace(
        /- \{ name: google.*\}/,
        `- { name: corp, type: oidc, issuer: "${issuer.issuer}", client_id: ${TEST_CLIENT_ID}, client_secret: ${TEST_CLIENT_SECRET}, scopes: [openid, email], supports_pkce: true }`,
      )
      .replace(
        /shares:\n.*$/s,
        `shares:\n  - { token: one, target: "${backend.url.href}", oauth_provider: corp, oauth_email_address_patterns: ["*@example.com"] }\n`,
      );
    writeFileSync(file, JSON.stringify(parse(yaml), null, 2));
    loaded = await loadedWhile(file, async (port) => {
      const share = 'one.svc.localhost:8080';
      const visit = await get(port, share, '/');
      expect(visit.status).toBe(302);
      // The share host sends the browser to the endpoint host's start, which sets the login cookie.
      const startUrl = new URL(visit.headers.location ?? '');
      const start = await get(port, startUrl.host, `${startUrl.pathname}${startUrl.search}`);
      expect(start.status).toBe(302);
      const authorize = new URL(start.headers.location ?? '');
      const nonce = authorize.searchParams.get('nonce');
      issuer.behaviour.claims = (claims) => ({ ...claims, nonce });
      const callbackUrl = new URL(authorize.searchParams.get('redirect_uri') ?? '');
      callbackUrl.search = new URLSearchParams({
        code: 'code-1',
        state: authorize.searchParams.get('state') ?? '',
        iss: issuer.issuer,
      }).toString();
      const back = await get(port, callbackUrl.host, `${callbackUrl.pathname}${callbackUrl.search}`, {
        headers: { cookie: cookiesFrom(start) },
      });
      expect(back.status).toBe(302);
      // The share host's hand-over sets the session, for the browser holding its binding cookie.
      const to = new URL(back.headers.location ?? '');
      const handOver = await get(port, to.host, `${to.pathname}${to.search}`, {
        headers: { cookie: cookiesFrom(visit) },
      });
      expect(handOver.status).toBe(302);
      served = (await get(port, share, '/', { headers: { cookie: cookiesFrom(handOver) } })).status;
    });
  });
  afterAll(async () => {
    await Promise.all([backend?.close(), issuer?.close()]);
  });

  it('serves the share to the visitor it logged in, after a key set and a token request', () => {
    expect(served).toBe(200);
    expect(issuer.requests).toEqual({ jwks: 1, token: 1 });
  });

  it('loaded neither undici nor node:tls, node:http2 or node:zlib, nor a YAML parser; jose for the ID token', () => {
    expect(loaded.packages).toContain('jose');
    expect(loaded.undici).toBe(false);
    expect(loaded.packages).not.toContain('yaml');
    expect(loaded.builtins.filter((m) => ['tls', 'http2', 'zlib', 'https'].includes(m))).toEqual([]);
  });

  it('loaded no part of the development identity provider (oidc-provider, devidp/)', () => {
    expect(loaded.packages).not.toContain('oidc-provider');
  });
});

/**
 * A share's sidecar in Kubernetes never takes a login callback: the installation's auth endpoint
 * does, with the same keys, and the sidecar only opens the session cookie. It then never loads jose
 * (and Node's WebCrypto with it), which it needs only to verify an ID token.
 */
describe('an oidc share sidecar serving a session made by the auth endpoint', () => {
  let backend: EchoBackend;
  let issuer: TestIssuer;
  let loaded: Loaded;
  let served: number;
  const dir = mkdtempSync(join(tmpdir(), 'svc-loaded-sidecar-'));

  beforeAll(async () => {
    [backend, issuer] = await Promise.all([startEchoBackend(), startTestIssuer()]);
    const config = parse(openSharesConfig([], backend.url)) as { oauth: Record<string, unknown> };
    config.oauth.providers = [
      {
        name: 'corp',
        type: 'oidc',
        issuer: issuer.issuer,
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
        scopes: ['openid', 'email'],
        supports_pkce: true,
      },
    ];
    const shares = [{ token: 'one', target: backend.url.href, oauth_provider: 'corp' }];
    const file = join(dir, 'frontend.json');
    writeFileSync(file, JSON.stringify({ ...config, shares }, null, 2));
    const keys = { signing: config.oauth.signing_key as string, encryption: config.oauth.encryption_key as string };
    loaded = await loadedWhile(file, async (port) => {
      const cookie = mintSessionCookie({ share: 'one', provider: 'corp' }, keys);
      served = (await get(port, 'one.svc.localhost:8080', '/', { headers: { cookie } })).status;
    });
  });
  afterAll(async () => {
    await Promise.all([backend?.close(), issuer?.close()]);
  });

  it('serves the visitor without loading jose', () => {
    expect(served).toBe(200);
    expect(issuer.requests).toEqual({ jwks: 0, token: 0 });
    expect(loaded.packages).not.toContain('jose');
  });
});
