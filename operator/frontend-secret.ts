import { parse as parseYaml } from 'yaml';
import { ConfigReader } from '../lib/config-reader.ts';
import { errorText, problem, type Result } from '../lib/errors.ts';
import { readOAuth, type OAuthConfig } from '../lib/config/frontend.ts';

/** Key of the installation's frontend Secret that holds the `oauth:` section (docs/kubernetes.md, "What the chart installs"). */
const FRONTEND_SECRET_KEY = 'oauth.yaml';

/**
 * The installation's frontend settings, read from the `<release>-frontend` Secret. `section` is the
 * raw `oauth:` mapping: it holds client secrets and keys, so it goes only into the auth endpoint's
 * Secret in the release namespace — never into a share's namespace, status, Events or logs. A share
 * pod gets a section made from it for its share alone (lib/config/share-pod.ts).
 */
export interface Installation {
  readonly section: Record<string, unknown>;
  readonly oauth: OAuthConfig;
  /** The auth endpoint's internal base URL, where share pods ask for what needs the client secret. */
  readonly authServiceUrl: string;
}

/** The auth endpoint's internal port (container and `<release>-auth-internal` Service). */
export const AUTH_INTERNAL_PORT = 8081;

/**
 * The in-cluster URL of the auth endpoint's internal Service of the release whose frontend Secret
 * is `<release>-frontend` in `namespace` (charts/svc/templates/auth.yaml).
 */
export function authServiceUrl(frontendSecret: { namespace: string; name: string }): string {
  const release = frontendSecret.name.replace(/-frontend$/, '');
  return `http://${release}-auth-internal.${frontendSecret.namespace}.svc:${AUTH_INTERNAL_PORT}`;
}

export type InstallationResult = Result<Installation>;

/**
 * Parses the Secret's `oauth.yaml`: either the `oauth:` section itself or a document with a
 * top-level `oauth:` key. Problems name fields, never values of secret fields.
 */
export function parseInstallation(
  data: Record<string, string> | undefined,
  authService = authServiceUrl({ namespace: 'svc-system', name: 'svc-frontend' }),
): InstallationResult {
  const encoded = data?.[FRONTEND_SECRET_KEY];
  if (encoded === undefined)
    return { ok: false, problems: [problem('', `key ${FRONTEND_SECRET_KEY} is missing`, 'required')] };
  let doc: unknown;
  try {
    doc = parseYaml(Buffer.from(encoded, 'base64').toString('utf8'), { uniqueKeys: true });
  } catch (err) {
    return {
      ok: false,
      problems: [problem(FRONTEND_SECRET_KEY, `YAML syntax: ${errorText(err).split('\n')[0] ?? ''}`)],
    };
  }
  const section = isMapping(doc) && isMapping(doc.oauth) ? doc.oauth : doc;
  const r = new ConfigReader();
  const oauth = readOAuth(r, section);
  if (!oauth || r.problems.length > 0 || !isMapping(section))
    return { ok: false, problems: r.problems.length > 0 ? r.problems : [problem('oauth', 'must be a mapping')] };
  return { ok: true, value: { section, oauth, authServiceUrl: authService } };
}

/**
 * The public URL of a share: `<scheme>://<token>.<domain>[:port]`, the port from endpoint_url and
 * the scheme `https` only when share hosts get TLS (operator/share-tls.ts).
 */
export function frontendEndpoint(token: string, domain: string, endpointUrl: URL | undefined, tls: boolean): string {
  const scheme = tls ? 'https:' : 'http:';
  const port = endpointUrl?.port ? `:${endpointUrl.port}` : '';
  return `${scheme}//${token}.${domain}${port}`;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
