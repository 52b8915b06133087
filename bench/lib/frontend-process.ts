import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { devInteractionsLogin } from './dev-login.ts';
import { FIXED_BODY_START } from './fixed-backend.ts';
import { CookieJar, request } from './http.ts';
import { imageEnvironment, imageNodeFlags } from './image.ts';
import { inMemoryLimit, type MemoryLimits } from './memory-limit.ts';
import { startModule, startProcess, type BenchProcess } from './processes.ts';

/** The frontends' share domain in the benchmarks: `<token>.bench.localhost` resolves to loopback. */
export const DOMAIN = 'bench.localhost';

/** The development OpenID provider (devidp/provider.ts) in its own process: the frontends' issuer. */
export function startDevIdp(
  timeoutMs?: number,
): Promise<BenchProcess<{ issuer: string; clientId: string; clientSecret: string }>> {
  const module = join(import.meta.dirname, '../../devidp/provider.ts');
  return startModule('dev-idp', module, 'startDevIdentityProvider', {}, timeoutMs);
}

/** Node flags and environment beyond the deployed ones (`--variant`). */
export interface RuntimeVariant {
  readonly text: string;
  readonly nodeFlags: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * `'MALLOC_ARENA_MAX=2 --max-semi-space-size=4'` (`--variant`, `--a-flags`, `--b-flags`): `NAME=value`
 * words become environment variables, `--x` words Node flags; anything else names the option.
 */
export function parseVariant(option: string, text: string, allowEmpty = false): RuntimeVariant {
  const nodeFlags: string[] = [];
  const env: Record<string, string> = {};
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const assignment = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(word);
    if (assignment?.[1] !== undefined) env[assignment[1]] = assignment[2] ?? '';
    else if (word.startsWith('--')) nodeFlags.push(word);
    else throw new Error(`--${option}: "${word}" is neither NAME=value nor a --node-flag`);
  }
  if (!allowEmpty && nodeFlags.length === 0 && Object.keys(env).length === 0)
    throw new Error(`--${option} needs at least one setting`);
  return { text, nodeFlags, env };
}

/** Start-up of the frontend process: spawn → "frontend listening" logged, and → /readyz answers 200. */
export interface Startup {
  readonly listeningMs: number;
  readonly readyMs: number;
}

/** A real login through the provider's form: the session cookie of the OAuth share at `share`. */
export async function frontendLogin(share: URL, issuer: string): Promise<string> {
  const jar = new CookieJar();
  const unauthenticated = await request(share);
  const start = new URL(unauthenticated.headers.location ?? '/', share);
  if (unauthenticated.status !== 302 || !start.pathname.endsWith('/auth/start'))
    throw new Error(`the OAuth share did not redirect to the login start (status ${unauthenticated.status})`);
  const started = await request(start);
  if (started.status !== 302 || !started.headers.location?.startsWith(issuer))
    throw new Error(`the login start did not redirect to the provider (status ${started.status})`);
  const login = await devInteractionsLogin({ start: share, jar, login: 'bench@example.com' });
  const cookie = jar.header(share);
  if (login.reply.status !== 200 || !login.reply.body.startsWith(FIXED_BODY_START) || !cookie)
    throw new Error(`login did not end on the backend's page (status ${login.reply.status})`);
  return cookie;
}

/** `svc frontend --config <file>` exactly as a sidecar runs it (from checkout `root`), with one open and one OAuth share. */
export interface FrontendProcessOptions {
  /** The checkout whose bin/svc.js runs. */
  readonly root: string;
  /** Scratch directory for the config file. */
  readonly dir: string;
  readonly port: number;
  /** Absent: no metrics listener. */
  readonly metricsPort?: number;
  readonly backend: URL;
  readonly idp: { readonly issuer: string; readonly clientId: string; readonly clientSecret: string };
  /** The frontend file's `workers` (absent: the default, one process). */
  readonly workers?: number;
  /** Node flags and environment beyond the deployed ones. */
  readonly variant?: RuntimeVariant;
  /** Where the process gets its own memory cgroup (`--memory-limit`). */
  readonly memoryLimits: MemoryLimits;
  /**
   * The installation this frontend belongs to, as in Kubernetes: its keys and the port of the auth
   * endpoint (another frontend) that takes the logins. Absent: a frontend of its own, which takes
   * its logins itself (fresh keys, `endpoint_url` on its own port).
   */
  readonly installation?: BenchInstallation;
  /** How long the process may take to log that it listens (default 20 s). */
  readonly startTimeoutMs?: number;
}

/** What the frontends of one installation share (bench:share-pod). */
export interface BenchInstallation {
  readonly authPort: number;
  readonly signingKey: string;
  readonly encryptionKey: string;
}

/** Fresh keys and the auth endpoint's port for a set of frontends that accept each other's sessions. */
export function benchInstallation(authPort: number): BenchInstallation {
  return {
    authPort,
    signingKey: randomBytes(32).toString('base64url'),
    encryptionKey: randomBytes(24).toString('base64url'),
  };
}

export async function startFrontendProcess(
  options: FrontendProcessOptions,
): Promise<{ frontend: BenchProcess<true>; startup: Startup }> {
  const { root, dir, port, metricsPort, backend, idp, workers, variant, memoryLimits } = options;
  const installation = options.installation ?? benchInstallation(port);
  const config = {
    oauth: {
      bind_address: `127.0.0.1:${port}`,
      endpoint_url: `http://auth.${DOMAIN}:${installation.authPort}`,
      cookie_name: 'svc-bench',
      cookie_domain: DOMAIN,
      session_lifetime: '6h',
      intermediate_lifetime: '5m',
      signing_key: installation.signingKey,
      encryption_key: installation.encryptionKey,
      providers: [
        {
          name: 'dev',
          type: 'oidc',
          client_id: idp.clientId,
          client_secret: idp.clientSecret,
          scopes: ['openid', 'email', 'profile'],
          issuer: idp.issuer,
          supports_pkce: true,
        },
      ],
    },
    ...(metricsPort === undefined ? {} : { metrics_address: `127.0.0.1:${metricsPort}` }),
    ...(workers === undefined ? {} : { workers }),
    shares: [
      { token: 'open', target: backend.href },
      { token: 'login', target: backend.href, oauth_provider: 'dev', oauth_email_address_patterns: ['*@example.com'] },
    ],
  };
  const file = join(dir, 'frontend.yaml');
  // JSON, as the operator writes a share sidecar's config (svc then loads no YAML parser).
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  const spawned = performance.now();
  const frontend = await startProcess<true>({
    name: 'frontend',
    ...inMemoryLimit(memoryLimits.next(), process.execPath, [
      ...imageNodeFlags(),
      ...(variant?.nodeFlags ?? []),
      join(root, 'bin/svc.js'),
      'frontend',
      '--config',
      file,
    ]),
    cwd: root,
    env: { ...process.env, ...imageEnvironment(), ...variant?.env },
    ready: (line) => (line.includes('"msg":"frontend listening"') ? true : undefined),
    ...(options.startTimeoutMs === undefined ? {} : { timeoutMs: options.startTimeoutMs }),
  });
  const listeningMs = performance.now() - spawned;
  // Ready for logins once the provider's discovery has succeeded (polled every 10 ms).
  for (let i = 0; i < 1000; i += 1) {
    const ready = await request(new URL(`http://127.0.0.1:${port}/readyz`)).catch(() => undefined);
    if (ready?.status === 200) {
      return { frontend, startup: { listeningMs, readyMs: performance.now() - spawned } };
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`the frontend did not become ready:\n${frontend.output().slice(-2000)}`);
}
