import { join, loadYamlFile, withFlags } from '../lib/config-reader.ts';
import { readOAuth, type OAuthConfig } from '../lib/config/frontend.ts';
import type { ListenAddress } from '../lib/listen.ts';
import { readControllerSections, type AgentControllerConfig, type ControllerSettings } from '../controller/config.ts';
import type { TunnelLimits } from '../lib/tunnel/protocol.ts';
import { readTunnelLimits } from './tunnel-config.ts';

/** Settings of `svc serve` (docs/agent.md, "Configuration"). */
export interface ServeConfig {
  readonly dataDir?: string;
  readonly frontend: {
    /** Where the public frontend listens. */
    readonly listen: ListenAddress;
    /** Share hosts are `<token>.<domain>`. */
    readonly domain: string;
    /** Scheme and port of emitted share URLs; absent means `http` and the port actually listened on. */
    readonly endpointUrl?: URL;
    readonly metricsListen?: ListenAddress;
  };
  readonly oauth?: OAuthConfig;
  /** The controller API (docs/controller.md): runs when a `controller` or `agent_controller` section is present. */
  readonly controller?: { readonly settings: ControllerSettings; readonly agentController?: AgentControllerConfig };
  /** Limits of the installation's tunnels (`svc controller` with a frontend; unused by svc serve). */
  readonly tunnel?: TunnelLimits;
}

const DEFAULT_DOMAIN = 'svc.localhost';
const DEFAULT_LISTEN: ListenAddress = { host: '127.0.0.1', port: 8080 };

const TOP_KEYS = ['data_dir', 'frontend', 'oauth', 'controller', 'agent_controller', 'tunnel'];
const FRONTEND_KEYS = ['listen', 'domain', 'endpoint_url', 'metrics_listen'];
const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** The `svc serve` flags that take part in validation (`--data-dir` only chooses a folder). */
export interface ServeFlags {
  /** `--listen`: the frontend's address, in place of `frontend.listen` or `oauth.bind_address`. */
  readonly listen?: string;
  /** `--dev`: the development provider brings its own oauth section. */
  readonly dev?: boolean;
}

/** The serve config file at `path` (none: every default) with the flags merged in; see {@link parseServeConfig}. */
export function loadServeConfig(path: string | undefined, flags: ServeFlags = {}): ServeConfig {
  return parseServeConfig(path === undefined ? {} : (loadYamlFile(path) ?? {}), flags, path);
}

/**
 * Validates a serve config with its flags merged in, reporting every problem of both at once (a
 * flag's problem names the flag). With an `oauth` section the frontend's listen address, share
 * domain and public URL come from `oauth.bind_address`, `oauth.cookie_domain` and
 * `oauth.endpoint_url` (the frontend serves shares at `<token>.<cookie_domain>`), so they cannot
 * disagree; `frontend.listen`, `frontend.domain` and `frontend.endpoint_url` are then refused.
 */
export function parseServeConfig(doc: unknown, flags: ServeFlags = {}, path?: string): ServeConfig {
  const source = path ?? 'the svc serve flags';
  const hasOAuth = isMapping(doc) && doc.oauth !== undefined && doc.oauth !== null;
  const merged = withFlags(doc, [
    { flag: '--listen', path: hasOAuth ? 'oauth.bind_address' : 'frontend.listen', value: flags.listen },
  ]);
  const r = merged.reader;
  const top = r.object(merged.doc, '(document)') ?? {};
  r.unknownKeys(top, '', TOP_KEYS);
  if (flags.dev && hasOAuth)
    r.problem('--dev', 'brings its own oauth section: remove oauth from the config file or drop --dev');
  const dataDir = r.string(top, 'data_dir', '', { required: false });
  const oauth = hasOAuth ? readOAuth(r, top.oauth) : undefined;
  const f = r.object(top.frontend, 'frontend', { required: false }) ?? {};
  r.unknownKeys(f, 'frontend', FRONTEND_KEYS);
  if (hasOAuth) {
    const from = { listen: 'bind_address', domain: 'cookie_domain', endpoint_url: 'endpoint_url' } as const;
    for (const [key, oauthKey] of Object.entries(from)) {
      if (f[key] !== undefined)
        r.problem(join('frontend', key), `comes from oauth.${oauthKey} when an oauth section is present; remove it`);
    }
  }
  const listen = !hasOAuth && f.listen !== undefined ? r.bindAddress(f, 'listen', 'frontend') : undefined;
  const domain = !hasOAuth ? r.string(f, 'domain', 'frontend', { required: false })?.toLowerCase() : undefined;
  if (domain !== undefined && !DOMAIN.test(domain)) {
    r.problem('frontend.domain', `must be a DNS domain such as share.example.com, got ${JSON.stringify(domain)}`);
  }
  const endpointUrl = !hasOAuth && f.endpoint_url !== undefined ? r.url(f, 'endpoint_url', 'frontend') : undefined;
  if (endpointUrl && (endpointUrl.pathname !== '/' || endpointUrl.search || endpointUrl.hash || endpointUrl.username)) {
    r.problem('frontend.endpoint_url', 'must be a base URL without path, query, fragment or credentials');
  }
  const metricsListen = f.metrics_listen !== undefined ? r.bindAddress(f, 'metrics_listen', 'frontend') : undefined;
  const withController = top.controller !== undefined || top.agent_controller !== undefined;
  const sections = withController ? readControllerSections(r, top, path) : undefined;
  const tunnel = top.tunnel !== undefined ? readTunnelLimits(r, top.tunnel) : undefined;
  r.finish(source);
  return {
    ...(dataDir ? { dataDir } : {}),
    frontend: {
      listen: oauth?.bindAddress ?? listen ?? DEFAULT_LISTEN,
      domain: oauth?.cookieDomain ?? domain ?? DEFAULT_DOMAIN,
      ...(oauth ? { endpointUrl: oauth.endpointUrl } : endpointUrl ? { endpointUrl } : {}),
      ...(metricsListen ? { metricsListen } : {}),
    },
    ...(oauth ? { oauth } : {}),
    ...(tunnel ? { tunnel } : {}),
    ...(sections
      ? {
          controller: {
            settings: sections.controller,
            ...(sections.agentController ? { agentController: sections.agentController } : {}),
          },
        }
      : {}),
  };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The public URL of a share: `<scheme>://<token>.<domain>[:<port>]`. */
export function shareUrl(token: string, domain: string, base: { protocol: string; port: number | string }): string {
  const url = new URL(`${base.protocol}//${token}.${domain}`);
  url.port = String(base.port);
  return url.origin;
}
