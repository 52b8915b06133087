import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RemoteExecutor, RemoteShareArgs } from '../../agent/remoting/executor.ts';
import type { AgentErrorCode } from '../../lib/error-codes.ts';
import { SvcError } from '../../lib/errors.ts';

/** Shares the fixture made before the specs run (not through `executor.share`), by token. */
export interface SeededShares {
  /** Public proxy share of the contract's backend. */
  readonly publicProxy: string;
  /** Private proxy share of the contract's backend. */
  readonly privateProxy: string;
  /** A web share (a folder on one machine, a volume in a cluster). */
  readonly web: string;
}

export interface ExecutorFixture {
  readonly executor: RemoteExecutor;
  readonly shares: SeededShares;
  close(): Promise<void>;
}

interface Refusal {
  readonly code: AgentErrorCode;
  readonly status: number;
  readonly message: string;
  /** Field paths of the problems, in order (for input refused as a whole). */
  readonly paths?: readonly string[];
}

type Command = (executor: RemoteExecutor, shares: SeededShares) => Promise<unknown>;

const proxy = (extra: Partial<RemoteShareArgs> = {}): RemoteShareArgs => ({
  shareMode: 'public',
  backendMode: 'proxy',
  target: 'http://127.0.0.1:3000',
  ...extra,
});
const share =
  (args: RemoteShareArgs): Command =>
  (executor) =>
    executor.share(args);
const healthcheck =
  (extra: { expectedHttpResponse?: number; timeout?: string }, which: keyof SeededShares = 'publicProxy'): Command =>
  (executor, shares) =>
    executor.healthcheck({
      shareToken: shares[which],
      httpVerb: 'GET',
      endpoint: '/',
      expectedHttpResponse: 200,
      ...extra,
    });
const invalidShare = (lines: readonly string[]): Refusal => ({
  code: 'invalid_share',
  status: 400,
  message: `invalid share:\n  - ${lines.join('\n  - ')}`,
  paths: lines.map((l) => l.slice(0, l.indexOf(':'))),
});
const invalidHealthCheck = (lines: readonly string[]): Refusal => ({
  code: 'invalid_input',
  status: 400,
  message: `invalid health check:\n  - ${lines.join('\n  - ')}`,
  paths: lines.map((l) => l.slice(0, l.indexOf(':'))),
});
const PRIVATE_OAUTH =
  'oauthProvider: OAuth options apply to public shares only (a private share is reached through an access)';

/**
 * One table of bad `/agent/*` commands, and the refusal each must get — the same code, status,
 * message and problem paths whichever executor answers. Left out on purpose, as documented
 * differences of the two shapes (docs/controller.md, "The environment agent"): web shares (a local
 * folder on one machine; refused through the API in a cluster), an unknown OAuth provider (known to
 * a single-machine agent; in a cluster only the operator knows the installation's providers), and
 * bind port 0 (any free port on one machine; no Service port).
 */
const REFUSALS: readonly [string, Command, Refusal | ((shares: SeededShares) => Refusal)][] = [
  [
    'share: a share mode that does not exist',
    share(proxy({ shareMode: 'secret' })),
    invalidShare(['shareMode: must be one of public, private, got "secret"']),
  ],
  [
    'share: a backend mode that does not exist',
    share(proxy({ backendMode: 'ftp' })),
    invalidShare(['backendMode: must be one of proxy, web, tcp, got "ftp"']),
  ],
  ['share: no target', share(proxy({ target: '' })), invalidShare(['target: required'])],
  [
    'share: a target that is no URL',
    share(proxy({ target: 'not a url' })),
    invalidShare(['target: must be an absolute URL, got "not a url"']),
  ],
  [
    'share: a target that is no http(s) URL',
    share(proxy({ target: 'file:///etc/passwd' })),
    invalidShare(['target: must be an http or https URL, got "file:///etc/passwd"']),
  ],
  [
    'share: OAuth options without a provider',
    share(proxy({ oauthEmailAddressPatterns: ['*@example.com'] })),
    invalidShare(['oauthProvider: required when oauthEmailAddressPatterns or oauthCheckInterval is set']),
  ],
  [
    'share: OAuth on a private share',
    share(proxy({ shareMode: 'private', oauthProvider: 'dev' })),
    invalidShare([PRIVATE_OAUTH]),
  ],
  [
    'share: an email pattern that does not compile',
    share(proxy({ oauthProvider: 'dev', oauthEmailAddressPatterns: ['*@example.com', '[oops'] })),
    invalidShare(['oauthEmailAddressPatterns[1]: glob "[oops" has an unclosed \'[\'']),
  ],
  [
    'share: a check interval that is no duration',
    share(proxy({ oauthProvider: 'dev', oauthCheckInterval: 'soon' })),
    invalidShare(['oauthCheckInterval: must be a duration such as 30m or 3h, got "soon"']),
  ],
  [
    'share: every problem at once',
    share({
      shareMode: 'private',
      backendMode: 'ftp',
      target: 'not a url',
      oauthEmailAddressPatterns: ['[oops'],
      oauthCheckInterval: 'soon',
    }),
    invalidShare([
      'backendMode: must be one of proxy, web, tcp, got "ftp"',
      'target: must be an absolute URL, got "not a url"',
      'oauthProvider: required when oauthEmailAddressPatterns or oauthCheckInterval is set',
      PRIVATE_OAUTH,
      'oauthEmailAddressPatterns[0]: glob "[oops" has an unclosed \'[\'',
      'oauthCheckInterval: must be a duration such as 30m or 3h, got "soon"',
    ]),
  ],
  [
    'unshare: an unknown token',
    (executor) => executor.unshare({ token: 'nosuchshare0' }),
    { code: 'unknown_share', status: 404, message: 'unknown share token "nosuchshare0"' },
  ],
  [
    'access: an unknown share',
    (executor) => executor.access({ shareToken: 'nosuchshare0' }),
    { code: 'unknown_share', status: 404, message: 'unknown share token "nosuchshare0"' },
  ],
  [
    'access: a public share',
    (executor, shares) => executor.access({ shareToken: shares.publicProxy }),
    (shares) => ({
      code: 'not_private',
      status: 400,
      message: `share ${shares.publicProxy} is public: reach it through the public frontend`,
    }),
  ],
  [
    'access: a bind address that is no ip:port',
    (executor, shares) => executor.access({ shareToken: shares.privateProxy, bindAddress: 'here' }),
    {
      code: 'invalid_bind',
      status: 400,
      message: 'invalid access:\n  - bindAddress: must be ip:port (for example 0.0.0.0:8080), got "here"',
      paths: ['bindAddress'],
    },
  ],
  [
    'unaccess: an unknown token',
    (executor) => executor.unaccess({ token: 'nosuchaccess' }),
    { code: 'unknown_access', status: 404, message: 'unknown access token "nosuchaccess"' },
  ],
  [
    'healthcheck: an unknown share',
    (executor) =>
      executor.healthcheck({ shareToken: 'nosuchshare0', httpVerb: 'GET', endpoint: '/', expectedHttpResponse: 200 }),
    { code: 'unknown_share', status: 404, message: 'unknown share token "nosuchshare0"' },
  ],
  [
    'healthcheck: a web share',
    healthcheck({}, 'web'),
    (shares) => ({
      code: 'healthcheck_unsupported',
      status: 400,
      message: `share ${shares.web} has backend mode web; health checks exist only for proxy backends`,
    }),
  ],
  [
    'healthcheck: an endpoint that names another host',
    (executor, shares) =>
      executor.healthcheck({
        shareToken: shares.publicProxy,
        httpVerb: 'GET',
        endpoint: '//other-host/x',
        expectedHttpResponse: 200,
      }),
    invalidHealthCheck([
      'endpoint: must be a path on the share\'s backend, starting with a single / (got "//other-host/x")',
    ]),
  ],
  [
    'healthcheck: an expected status that is no HTTP status',
    healthcheck({ expectedHttpResponse: 42 }),
    invalidHealthCheck(['expectedHttpResponse: must be an HTTP status code (100-599), got 42']),
  ],
  [
    'healthcheck: a timeout that is no duration',
    healthcheck({ timeout: 'soon' }),
    invalidHealthCheck(['timeout: must be a duration such as 500ms, 5s or 1m, got "soon"']),
  ],
  [
    'healthcheck: a timeout beyond 5 minutes',
    healthcheck({ timeout: '1h' }),
    invalidHealthCheck(['timeout: must be between 1ms and 5m, got "1h"']),
  ],
  [
    'healthcheck: both limits wrong',
    healthcheck({ expectedHttpResponse: 1000, timeout: '0s' }),
    invalidHealthCheck([
      'expectedHttpResponse: must be an HTTP status code (100-599), got 1000',
      'timeout: must be a duration such as 500ms, 5s or 1m, got "0s"',
    ]),
  ],
];

/**
 * The RemoteExecutor contract (docs/controller.md): run it from each executor's test with a fixture
 * that seeds three shares whose proxy targets are `backendUrl` (a backend this suite runs, answering
 * 503). A single-machine agent and a Kubernetes environment agent must refuse the same bad command
 * with the same code, status, message and problem paths, and change nothing when they refuse.
 */
export function runExecutorContract(
  name: string,
  setup: (options: { backendUrl: string }) => Promise<ExecutorFixture>,
): void {
  describe(`RemoteExecutor contract: ${name}`, () => {
    let backend: http.Server;
    let fixture: ExecutorFixture;

    beforeAll(async () => {
      backend = http.createServer((_req, res) => res.writeHead(503).end());
      await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
      const { port } = backend.address() as AddressInfo;
      fixture = await setup({ backendUrl: `http://127.0.0.1:${port}` });
    }, 120_000);

    afterAll(async () => {
      await fixture?.close();
      await new Promise((resolve) => backend?.close(resolve));
    });

    it.each(REFUSALS)('refuses %s', async (_what, command, expected) => {
      const refusal = typeof expected === 'function' ? expected(fixture.shares) : expected;
      const err = await command(fixture.executor, fixture.shares).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SvcError);
      const { code, status, message, problems } = err as SvcError;
      expect({ code, status, message }).toEqual({
        code: refusal.code,
        status: refusal.status,
        message: refusal.message,
      });
      expect(problems.map((p) => p.path)).toEqual(refusal.paths ?? []);
    });

    it('changed nothing while refusing, and checks a proxy share it holds', async () => {
      const status = await fixture.executor.status();
      expect(status.shares?.map((s) => s.token).sort()).toEqual(Object.values(fixture.shares).sort());
      expect(status.accesses).toBeNull();
      expect(await healthcheck({})(fixture.executor, fixture.shares)).toEqual({
        healthy: false,
        error: "unexpected status code; got '503', want '200'",
      });
    });
  });
}
