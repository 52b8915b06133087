import { readFileSync } from 'node:fs';
import { isAbsolute, resolve, dirname } from 'node:path';
import { join, loadYamlFile, withFlags, type ConfigReader } from '../lib/config-reader.ts';
import { readCredentialFile } from '../lib/config/credential.ts';
import { readBaseUrl, readDomain } from '../lib/config/frontend-section.ts';
import { problemText } from '../lib/errors.ts';
import type { ListenAddress } from '../lib/listen.ts';
import { loadIdentity, type ControllerIdentity } from '../lib/remoting/identity.ts';
import { readConsoleConfig, type ConsoleConfig } from './console/config.ts';

/** The `controller` section: where the REST API listens. */
export interface ControllerSettings {
  readonly listen: ListenAddress;
  /** Largest accepted request body. */
  readonly maxBodyBytes: number;
  /** How long the controller waits for an agent's answer. */
  readonly agentTimeoutMs: number;
}

/** The `agent_controller` section (seed: "Controller agent-remoting configuration"), with its identity loaded. */
export interface AgentControllerConfig {
  readonly zId: string;
  readonly identityPath: string;
  readonly identity: ControllerIdentity;
}

/** Settings of `svc controller [--config <file>]` with its flags. */
export interface ControllerConfigFile {
  readonly dataDir?: string;
  readonly controller: ControllerSettings;
  readonly agentController?: AgentControllerConfig;
  readonly store: StoreChoice;
  /** The `public_frontend` section: frontend replicas in their own processes serve tunnelled shares. */
  readonly publicFrontend?: PublicFrontendConfig;
  /** The `console` section (defaults when absent): the web console on the API host. */
  readonly console: ConsoleConfig;
}

/**
 * The `public_frontend` section (docs/controller.md): where the installation's frontend replicas
 * (`svc public-frontend`) serve shares, and the credential they present to the frontend API.
 */
export interface PublicFrontendConfig {
  /** Shares are `<scheme>://<token>.<domain>[:port of endpointUrl]`. */
  readonly domain: string;
  /** The frontend's public URL; agents dial `ws(s)://<host>/api/v1/tunnel` there. */
  readonly endpointUrl: URL;
  readonly credentialFile: string;
  /** The file's content, trimmed (never logged). */
  readonly credential: string;
  /** The provider names of the frontends' `oauth` section: the ones an OAuth share may name. */
  readonly providers: readonly string[];
  /**
   * How long a freed share token stays reserved to its account (controller/token-quarantine.ts);
   * absent: TOKEN_QUARANTINE_MS. Keep it above the frontends' `session_lifetime`.
   */
  readonly tokenQuarantineMs?: number;
  /**
   * The installation's own hosts under `domain` besides the endpoint's (the auth endpoint, the
   * controller API): no share token may take one (lib/share/reserved-tokens.ts).
   */
  readonly reservedHosts?: readonly string[];
}

/** The `svc controller` flags that take part in validation. */
export interface ControllerFlags {
  /** `--listen`, in place of `controller.listen`. */
  readonly listen?: string;
  readonly store?: string;
  readonly namespace?: string;
}

/**
 * Where accounts, environments and enrollments live (`--store`, `--namespace`): the embedded file
 * store under the data directory, or Secrets in a namespace (controller/kube-store.ts).
 */
export type StoreChoice = { readonly kind: 'file' } | { readonly kind: 'kubernetes'; readonly namespace: string };

export const DEFAULT_CONTROLLER_LISTEN: ListenAddress = { host: '127.0.0.1', port: 18080 };
const DEFAULT_MAX_BODY_BYTES = 64 * 1024;
export const DEFAULT_AGENT_TIMEOUT_MS = 30_000;
const CONTROLLER_KEYS = ['listen', 'max_body_bytes', 'agent_timeout'];
const AGENT_CONTROLLER_KEYS = ['z_id', 'identity_path'];

/**
 * Reads the `controller` and `agent_controller` sections of a config document into `r` (every
 * problem recorded with its field path). Used by `svc controller` and by `svc serve`, whose config
 * file carries the same two sections. A relative `identity_path` is relative to the config file.
 */
export function readControllerSections(
  r: ConfigReader,
  top: Record<string, unknown>,
  configPath?: string,
): { controller: ControllerSettings; agentController?: AgentControllerConfig } {
  const c = r.object(top.controller, 'controller', { required: false }) ?? {};
  r.unknownKeys(c, 'controller', CONTROLLER_KEYS);
  const listen = c.listen !== undefined ? r.bindAddress(c, 'listen', 'controller') : undefined;
  let maxBodyBytes = DEFAULT_MAX_BODY_BYTES;
  if (c.max_body_bytes !== undefined) {
    const v = c.max_body_bytes;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1024 || v > 16 * 1024 * 1024) {
      r.problem('controller.max_body_bytes', `must be an integer between 1024 and 16777216, got ${JSON.stringify(v)}`);
    } else maxBodyBytes = v;
  }
  const agentTimeoutMs = c.agent_timeout !== undefined ? r.duration(c, 'agent_timeout', 'controller') : undefined;
  const controller = {
    listen: listen ?? DEFAULT_CONTROLLER_LISTEN,
    maxBodyBytes,
    agentTimeoutMs: agentTimeoutMs ?? DEFAULT_AGENT_TIMEOUT_MS,
  };

  if (top.agent_controller === undefined || top.agent_controller === null) return { controller };
  const a = r.object(top.agent_controller, 'agent_controller');
  if (!a) return { controller };
  r.unknownKeys(a, 'agent_controller', AGENT_CONTROLLER_KEYS);
  const zId = r.string(a, 'z_id', 'agent_controller');
  const given = r.string(a, 'identity_path', 'agent_controller');
  if (!zId || !given) return { controller };
  const identityPath = isAbsolute(given) || !configPath ? resolve(given) : resolve(dirname(configPath), given);
  const loaded = loadIdentity(identityPath, zId);
  if (loaded.ok) return { controller, agentController: { zId, identityPath, identity: loaded.value } };
  for (const p of loaded.problems) r.problem(join('agent_controller', 'identity_path'), problemText(p));
  return { controller };
}

/**
 * `--store file|kubernetes` and `--namespace`, problems recorded in `r`. Without `--namespace`, the
 * Kubernetes store uses the pod's own namespace (`podNamespace`, which is only known inside a pod).
 */
export function readStoreFlags(
  r: ConfigReader,
  flags: { store?: string; namespace?: string },
): StoreChoice | undefined {
  const { store, namespace } = flags;
  if (store === undefined || store === 'file') {
    if (namespace !== undefined) r.problem('--namespace', 'only applies with --store kubernetes');
    return { kind: 'file' };
  }
  if (store !== 'kubernetes') {
    r.problem('--store', `must be file or kubernetes, got ${JSON.stringify(store)}`, 'not_allowed');
    return undefined;
  }
  const ns = namespace ?? podNamespace();
  if (!ns)
    r.problem(
      '--namespace',
      'required with --store kubernetes outside a pod (the namespace holding the records)',
      'required',
    );
  return ns ? { kind: 'kubernetes', namespace: ns } : undefined;
}

/** The namespace of the pod this process runs in (`POD_NAMESPACE`, else the service-account mount). */
function podNamespace(): string | undefined {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

const TOP_KEYS = ['data_dir', 'controller', 'agent_controller', 'public_frontend', 'console'];
const PUBLIC_FRONTEND_KEYS = [
  'domain',
  'endpoint_url',
  'credential_file',
  'providers',
  'token_quarantine',
  'reserved_hosts',
];

/** The `public_frontend` section, every problem recorded in `r`; a relative credential_file is relative to the config. */
export function readPublicFrontend(
  r: ConfigReader,
  value: unknown,
  configPath?: string,
): PublicFrontendConfig | undefined {
  const p = r.object(value, 'public_frontend');
  if (!p) return undefined;
  r.unknownKeys(p, 'public_frontend', PUBLIC_FRONTEND_KEYS);
  const domain = readDomain(r, p, 'domain', 'public_frontend');
  const endpointUrl = readBaseUrl(r, p, 'endpoint_url', 'public_frontend');
  const credential = readCredentialFile(r, p, 'credential_file', 'public_frontend', configPath);
  const providers = r.stringArray(p, 'providers', 'public_frontend', { required: false }) ?? [];
  const tokenQuarantineMs = r.duration(p, 'token_quarantine', 'public_frontend', { required: false });
  const reservedHosts = r.stringArray(p, 'reserved_hosts', 'public_frontend', { required: false }) ?? [];
  if (!domain || !endpointUrl || !credential) return undefined;
  return {
    domain,
    endpointUrl,
    ...credential,
    providers,
    ...(tokenQuarantineMs ? { tokenQuarantineMs } : {}),
    reservedHosts,
  };
}

/**
 * The controller config file at `path` (none: every default) with the flags merged in, validated in
 * one pass: every problem of the file and the flags is reported at once, a flag's under its name.
 */
export function loadControllerConfig(path: string | undefined, flags: ControllerFlags = {}): ControllerConfigFile {
  return parseControllerConfig(path === undefined ? {} : (loadYamlFile(path) ?? {}), flags, path);
}

/** Validates a controller config document read from `path` with the flags merged in; see {@link loadControllerConfig}. */
export function parseControllerConfig(doc: unknown, flags: ControllerFlags = {}, path?: string): ControllerConfigFile {
  const merged = withFlags(doc, [{ flag: '--listen', path: 'controller.listen', value: flags.listen }]);
  const r = merged.reader;
  const top = r.object(merged.doc, '(document)') ?? {};
  r.unknownKeys(top, '', TOP_KEYS);
  const dataDir = r.string(top, 'data_dir', '', { required: false });
  const sections = readControllerSections(r, top, path);
  const store = readStoreFlags(r, flags);
  const publicFrontend =
    top.public_frontend !== undefined ? readPublicFrontend(r, top.public_frontend, path) : undefined;
  const consoleConfig = readConsoleConfig(r, top.console, { oauth: true });
  r.finish(path ?? 'the svc controller flags');
  return {
    ...(dataDir ? { dataDir } : {}),
    ...sections,
    store: store as StoreChoice,
    ...(publicFrontend ? { publicFrontend } : {}),
    console: consoleConfig,
  };
}
