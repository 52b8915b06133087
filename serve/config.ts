import { loadYamlFile, withFlags } from '../lib/config-reader.ts';
import type { OAuthConfig } from '../lib/config/frontend.ts';
import { readFrontendSections, type FrontendSection } from '../lib/config/frontend-section.ts';
import { readTunnelLimits } from '../lib/config/tunnel.ts';
import { readControllerSections, type AgentControllerConfig, type ControllerSettings } from '../controller/config.ts';
import type { TunnelLimits } from '../lib/tunnel/protocol.ts';
import { readConsoleConfig, type ConsoleConfig } from '../controller/console/config.ts';
import { readUiSection, type UiConfig } from './ui-config.ts';

/** Settings of `svc serve` (docs/agent.md, "Configuration"). */
export interface ServeConfig {
  readonly dataDir?: string;
  readonly frontend: FrontendSection;
  readonly oauth?: OAuthConfig;
  /** The controller API (docs/controller.md): runs when a `controller` or `agent_controller` section is present. */
  readonly controller?: { readonly settings: ControllerSettings; readonly agentController?: AgentControllerConfig };
  /** Limits of the installation's tunnels (`svc controller` with a frontend; unused by svc serve). */
  readonly tunnel?: TunnelLimits;
  /** The installation's web console on the API host: read with a controller section (the installation). */
  readonly console?: ConsoleConfig;
  /** The agent's page and request inspector (`ui`). */
  readonly ui: UiConfig;
}

const TOP_KEYS = ['data_dir', 'frontend', 'oauth', 'controller', 'agent_controller', 'tunnel', 'console', 'ui'];

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
  const { frontend, oauth } = readFrontendSections(r, top);
  const withController = top.controller !== undefined || top.agent_controller !== undefined;
  const sections = withController ? readControllerSections(r, top, path) : undefined;
  const tunnel = top.tunnel !== undefined ? readTunnelLimits(r, top.tunnel) : undefined;
  const console = withController ? readConsoleConfig(r, top.console) : undefined;
  if (!withController && top.console !== undefined)
    r.problem('console', 'needs a controller section (the installation)');
  const ui = readUiSection(r, top.ui);
  r.finish(source);
  return {
    ...(console ? { console } : {}),
    ...(dataDir ? { dataDir } : {}),
    frontend,
    ui,
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
