import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { request } from './http.ts';
import { startProcess, type BenchProcess } from './processes.ts';

/** Where bench/provide-go-tools.sh puts its builds (outside the repository). */
export const GO_TOOLS_DIR = process.env.SVC_TEST_BIN ?? join(homedir(), '.cache', 'svc-test-bin');

/**
 * The release as published, and the same source with a 64-connection idle upstream pool (Go's
 * default keeps 2 idle connections per host, so under concurrency most requests dial anew).
 */
export type OAuth2ProxyBuild = 'oauth2-proxy' | 'oauth2-proxy-pool64';

export interface OAuth2ProxyOptions {
  readonly build: OAuth2ProxyBuild;
  /** Port to listen on at 127.0.0.1 (pick one with `freePort`: the redirect URL needs it up front). */
  readonly port: number;
  readonly upstream: URL;
  readonly idp: { readonly issuer: string; readonly clientId: string; readonly clientSecret: string };
}

let pinnedVersion: string | undefined;

/** The release bench/provide-go-tools.sh pins (its `version=` line), e.g. `v7.15.6`. Read once. */
export function oauth2ProxyVersion(): string {
  if (pinnedVersion) return pinnedVersion;
  const script = readFileSync(fileURLToPath(new URL('../provide-go-tools.sh', import.meta.url)), 'utf8');
  const version = /^version="(v[0-9][^"]*)"$/m.exec(script)?.[1];
  if (!version) throw new Error('bench/provide-go-tools.sh pins no oauth2-proxy version (a version="v…" line)');
  pinnedVersion = version;
  return version;
}

/** The build's path, when it is there and was built from the pinned release (its stamp says which). */
export function oauth2ProxyBinary(build: OAuth2ProxyBuild): string | undefined {
  const file = join(GO_TOOLS_DIR, build);
  const stamp = join(GO_TOOLS_DIR, 'oauth2-proxy.version');
  const built = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : undefined;
  return existsSync(file) && built === oauth2ProxyVersion() ? file : undefined;
}

/**
 * oauth2-proxy as a user would run it in front of one app: provider `oidc` against the same local
 * issuer as the frontend, PKCE, email domain example.com, cookie sessions, the user's identity
 * passed upstream (X-Forwarded-User/-Email, its default). Per-request logging is off, as it is
 * in the frontend; the secrets travel as environment variables, never on the command line.
 */
export async function startOAuth2Proxy(options: OAuth2ProxyOptions): Promise<BenchProcess<true>> {
  const binary = oauth2ProxyBinary(options.build);
  if (!binary) throw new Error(`${options.build} is not built: run bench/provide-go-tools.sh`);
  const address = `127.0.0.1:${options.port}`;
  const proc = await startProcess<true>({
    name: options.build,
    command: binary,
    args: [
      `--http-address=${address}`,
      '--provider=oidc',
      `--oidc-issuer-url=${options.idp.issuer.replace(/\/$/, '')}`,
      `--redirect-url=http://${address}/oauth2/callback`,
      `--upstream=${options.upstream.href}`,
      '--email-domain=example.com',
      '--scope=openid email profile',
      '--code-challenge-method=S256',
      '--skip-provider-button=true',
      '--cookie-secure=false',
      '--pass-user-headers=true',
      '--request-logging=false',
      '--silence-ping-logging=true',
    ],
    env: {
      ...process.env,
      OAUTH2_PROXY_CLIENT_ID: options.idp.clientId,
      OAUTH2_PROXY_CLIENT_SECRET: options.idp.clientSecret,
      OAUTH2_PROXY_COOKIE_SECRET: randomBytes(16).toString('hex'),
    },
    probe: async () => {
      const reply = await request(new URL(`http://${address}/ping`));
      return reply.status === 200 ? true : undefined;
    },
    timeoutMs: 20_000,
  });
  return proc;
}
