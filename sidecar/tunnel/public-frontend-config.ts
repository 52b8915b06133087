import { ConfigReader, loadYamlFile } from '../../lib/config-reader.ts';
import { readCredentialFile } from '../../lib/config/credential.ts';
import type { OAuthConfig } from '../../lib/config/frontend.ts';
import { readBaseUrl, readFrontendSections, type FrontendSection } from '../../lib/config/frontend-section.ts';
import { readTunnelLimits } from '../../lib/config/tunnel.ts';
import { DEFAULT_TUNNEL_LIMITS, type TunnelLimits } from '../../lib/tunnel/protocol.ts';
import { readReplicaSettings, type ReplicaSettings } from './replica-settings.ts';

/** Settings of `svc public-frontend --config <file>` (docs/controller.md, "The public frontend in its own process"). */
export interface PublicFrontendConfig {
  readonly frontend: FrontendSection;
  readonly oauth?: OAuthConfig;
  readonly tunnel: TunnelLimits;
  /** The controller API that holds the share registry, and the credential the frontend presents. */
  readonly controller: { readonly url: URL; readonly credentialFile: string; readonly credential: string };
  /** Several replicas (Kubernetes): where tunnels are recorded and how replicas reach each other. */
  readonly replicas?: ReplicaSettings;
}

const TOP_KEYS = ['frontend', 'oauth', 'tunnel', 'controller', 'replicas'];
const CONTROLLER_KEYS = ['url', 'credential_file'];

/** Loads and validates the file at `path`: one error listing every problem with its field path. */
export function loadPublicFrontendConfig(path: string): PublicFrontendConfig {
  return parsePublicFrontendConfig(loadYamlFile(path), path);
}

/**
 * Validates a public frontend config: the `frontend`, `oauth` and `tunnel` sections read exactly as
 * the installation's (lib/config/), plus `controller.url` and `controller.credential_file` (required)
 * and the optional `replicas` section (replica-settings.ts; its defaults come from `env`).
 */
export function parsePublicFrontendConfig(
  doc: unknown,
  path?: string,
  env: NodeJS.ProcessEnv = process.env,
): PublicFrontendConfig {
  const r = new ConfigReader();
  const top = r.object(doc, '(document)') ?? {};
  r.unknownKeys(top, '', TOP_KEYS);
  const { frontend, oauth } = readFrontendSections(r, top);
  const tunnel = top.tunnel !== undefined ? readTunnelLimits(r, top.tunnel) : DEFAULT_TUNNEL_LIMITS;
  const c = r.object(top.controller, 'controller');
  if (c) r.unknownKeys(c, 'controller', CONTROLLER_KEYS);
  const url = c ? readBaseUrl(r, c, 'url', 'controller') : undefined;
  const credential = c ? readCredentialFile(r, c, 'credential_file', 'controller', path) : undefined;
  const replicas = top.replicas !== undefined ? readReplicaSettings(r, top.replicas, env) : undefined;
  r.finish(path ?? 'the public frontend config');
  return {
    frontend,
    ...(oauth ? { oauth } : {}),
    tunnel,
    controller: { url: url as URL, ...(credential as { credential: string; credentialFile: string }) },
    ...(replicas ? { replicas } : {}),
  };
}
