import { Writable } from 'node:stream';
import { parseFrontendConfig, type FrontendConfig } from '../../lib/config/frontend.ts';
import { startFrontend, type RunningFrontend } from '../../sidecar/frontend.ts';
import type { FrontendLimits } from '../../sidecar/connections.ts';
import { staticShares } from '../../lib/share/source.ts';
import { createLogger } from '../../lib/logger.ts';
import { TestClock } from './clock.ts';

export const TEST_SIGNING_KEY = 'test-signing-key-0123456789abcdefghijkl';
export const TEST_ENCRYPTION_KEY = 'test-encryption-key-0123456789';

/** An idp1 provider whose endpoints are a closed port: for tests of a frontend that never completes a login. */
export const UNREACHABLE_IDP1 = {
  name: 'google',
  type: 'idp1',
  client_id: 'cid',
  client_secret: 'secret',
  authorize_url: 'http://127.0.0.1:9/auth',
  token_url: 'http://127.0.0.1:9/token',
  user_info_url: 'http://127.0.0.1:9/userinfo',
  revocation_url: 'http://127.0.0.1:9/revoke',
  login_url: 'http://127.0.0.1:9/login',
};

/** Captured JSON log lines of a frontend under test (to prove secrets never reach them). */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join('\n');
  }
}

export interface TestFrontend {
  readonly frontend: RunningFrontend;
  readonly port: number;
  readonly config: FrontendConfig;
  readonly logs: LogCapture;
  /** Host header value of a share (`<token>.svc.localhost:<port>`). */
  host(token: string): string;
  readonly authHost: string;
  /** The frontend's clock: real time until a test moves it forward (`clock.advance(ms)`). */
  readonly clock: TestClock;
  close(): Promise<void>;
}

/** What a test frontend is made of: providers and shares as a user writes them, and optional overrides. */
export interface TestFrontendDoc {
  providers: Record<string, unknown>[];
  shares: Record<string, unknown>[];
  oauth?: Record<string, unknown>;
  domain?: string;
  limits?: Partial<FrontendLimits>;
}

/**
 * A frontend config from a document written the way a user writes the YAML file (seed field
 * names), validated by the same parser the CLI uses; listening on 127.0.0.1:0.
 */
export function testFrontendConfig(doc: TestFrontendDoc): FrontendConfig {
  const domain = doc.domain ?? 'svc.localhost';
  return parseFrontendConfig({
    oauth: { ...testOAuthSection(domain, doc.providers), ...doc.oauth },
    shares: doc.shares,
  });
}

/** An `oauth:` section as a user writes it: the test keys, shares under `domain`, listening on 127.0.0.1:0. */
export function testOAuthSection(domain: string, providers: Record<string, unknown>[]): Record<string, unknown> {
  return {
    bind_address: '127.0.0.1:0',
    endpoint_url: `http://auth.${domain}:1`,
    cookie_name: 'svc-auth-session',
    cookie_domain: domain,
    session_lifetime: '6h',
    intermediate_lifetime: '5m',
    signing_key: TEST_SIGNING_KEY,
    encryption_key: TEST_ENCRYPTION_KEY,
    providers,
  };
}

/** Starts a real frontend on 127.0.0.1:0 from `testFrontendConfig(doc)`. */
export async function startTestFrontend(doc: TestFrontendDoc): Promise<TestFrontend> {
  const config = testFrontendConfig(doc);
  const logs = new LogCapture();
  const clock = new TestClock();
  const endpoint = config.oauth.endpointUrl;
  const frontend = await startFrontend({
    listen: { host: '127.0.0.1', port: 0 },
    endpointUrl: (port) => new URL(`${endpoint.protocol}//${endpoint.hostname}:${port}`),
    domain: config.oauth.cookieDomain,
    oauth: config.oauth,
    shares: staticShares(config.shares),
    logger: createLogger('frontend-test', { level: 'debug', destination: logs }),
    metricsListen: { host: '127.0.0.1', port: 0 },
    ...(doc.limits ? { limits: doc.limits } : {}),
    clock,
  });
  return {
    frontend,
    port: frontend.port,
    config,
    logs,
    host: (token) => `${token}.${doc.domain ?? 'svc.localhost'}:${frontend.port}`,
    authHost: `${frontend.endpointUrl.host}`,
    clock,
    close: () => frontend.close(),
  };
}

/**
 * The same shares and providers served twice: with the test keys, and with other keys (another
 * installation), whose cookies and login state the first must refuse.
 */
export async function startFrontendAndStranger(doc: {
  providers: Record<string, unknown>[];
  shares: Record<string, unknown>[];
}): Promise<[TestFrontend, TestFrontend]> {
  const own = await startTestFrontend(doc);
  const stranger = await startTestFrontend({
    ...doc,
    oauth: { signing_key: 'another-signing-key-0123456789abcdef', encryption_key: 'another-encryption-key-012' },
  });
  return [own, stranger];
}
