import type { ShareIngressOptions } from './options.ts';
import type { ProblemCode } from '../lib/error-codes.ts';
import { errorText, problem, type Problem, type Result } from '../lib/errors.ts';
import { CRD_SHARE_FIELDS } from '../lib/share/surfaces.ts';
import { HTTP_BACKEND_MODES } from '../lib/share/spec.ts';
import { storedOAuth, validateShareSpec, type ShareInput, type ShareRules } from '../lib/share/validate.ts';
import { parseFrontendConfig } from '../lib/config/frontend.ts';
import { sharePodOAuthSection } from '../lib/config/share-pod.ts';
import type { Installation } from './frontend-secret.ts';
import {
  AGENT_PORT,
  FRONTEND_CONFIG_DIR,
  FRONTEND_CONFIG_FILE,
  FRONTEND_METRICS_PORT,
  FRONTEND_PORT,
  WEB_ROOT,
  agentResources,
  containerSecurityContext,
  podDeployment,
  tmpMount,
  tmpVolume,
} from './pod.ts';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  SHARES,
  SHARE_LABEL,
  ownerReference,
  type KubeObject,
  type Share,
} from '../lib/kube/resources.ts';
import { deriveToken } from '../lib/token.ts';
import { ingressTls } from './share-tls.ts';
import { desiredShareRoute } from './share-route.ts';
import { applyPodSettings, type PodSettings } from './pod-settings.ts';

/** A Share spec that passed every check the CRD schema cannot make. */
export interface ValidShare {
  readonly name: string;
  readonly namespace: string;
  readonly token: string;
  /**
   * The Share object's uid: the identity its visitors' sessions are bound to, so a Share created
   * again with the same token (in any namespace) never accepts the sessions of the one before.
   */
  readonly instance: string;
  readonly shareMode: 'public' | 'private';
  readonly backendMode: 'proxy' | 'web';
  readonly target: string;
  readonly webVolume?: { configMap?: string; persistentVolumeClaim?: string };
  readonly oauth?: { provider: string; emailAddressPatterns: string[]; checkInterval: string };
}

/** Child names are `svc-share-<name>`; a Service name must be a DNS-1035 label (≤ 63). */
const MAX_NAME = 63 - 'svc-share-'.length;
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function childName(shareName: string): string {
  return `svc-share-${shareName}`;
}

export function frontendSecretName(shareName: string): string {
  return `${childName(shareName)}-frontend`;
}

/**
 * Checks what the CRD schema cannot: the name must fit the child objects, and the spec goes through
 * the one share validator (lib/share/validate.ts) with the Share object's field names — target
 * shape per backend mode, the web volume, email globs, the OAuth provider against the
 * installation's providers, a token the installation's own hosts use (`reservedTokens`, token →
 * host). Every problem is reported with its field path, at once. An OAuth share
 * while the installation's settings are unusable fails with one `not_ready` problem (the reconciler
 * waits instead of calling it invalid).
 */
export function validateShare(
  share: Share,
  installation: Installation | undefined,
  reservedTokens?: ReadonlyMap<string, string>,
): Result<ValidShare> {
  const problems: Problem[] = [];
  const { name, namespace = '', uid = '' } = share.metadata;
  const spec = share.spec ?? {};
  if (name.length > MAX_NAME || !DNS1035.test(childName(name))) {
    problems.push(
      problem(
        'metadata.name',
        `must be a DNS label of at most ${MAX_NAME} characters (it names the Service ${childName(name)})`,
      ),
    );
  }
  const rules: ShareRules = {
    backendModes: HTTP_BACKEND_MODES,
    unsupportedBackend: 'a Share object serves HTTP (proxy or web); a TCP share is made with svc share private',
    webTarget: volumeTargetProblem,
    webVolume: true,
    ...(installation ? { providerNames: installation.oauth.providers.map((p) => p.name) } : {}),
    ...(reservedTokens ? { reservedTokens } : {}),
  };
  const input: ShareInput = {
    token: spec.token ?? deriveToken(uid),
    shareMode: spec.shareMode,
    backendMode: spec.backendMode,
    target: spec.target ?? '',
    webVolume: spec.webVolume,
    oauthProvider: spec.oauth ? (spec.oauth.provider ?? '') : undefined,
    oauthEmailAddressPatterns: spec.oauth?.emailAddressPatterns,
    oauthCheckInterval: spec.oauth?.checkInterval,
  };
  const checked = validateShareSpec(input, CRD_SHARE_FIELDS, rules);
  if (!checked.ok) problems.push(...checked.problems);
  if (!checked.ok || problems.length > 0) return { ok: false, problems };
  const { token = '', shareMode, backendMode, target, webVolume } = checked.value;
  const { oauth } = storedOAuth(checked.value);
  if (oauth && !installation) {
    const message =
      'the installation frontend Secret is missing or invalid, so OAuth shares cannot be configured (see the operator log)';
    return { ok: false, problems: [problem('', message, 'not_ready')] };
  }
  const valid: ValidShare = {
    name,
    namespace,
    token,
    instance: uid || token,
    shareMode,
    // The rules admit the HTTP backend modes only.
    backendMode: backendMode as ValidShare['backendMode'],
    target,
    ...(webVolume ? { webVolume } : {}),
    ...(oauth ? { oauth } : {}),
  };
  if (valid.oauth && installation) {
    try {
      parseFrontendConfig(sidecarConfig(valid, installation), 'sidecar config');
    } catch (err) {
      return { ok: false, problems: [problem('', `the sidecar would reject its config: ${errorText(err)}`)] };
    }
  }
  return { ok: true, value: valid };
}

/** A web share's folder is in the volume the pod mounts at WEB_ROOT; never outside it. */
function volumeTargetProblem(target: string): { message: string; code: ProblemCode } | undefined {
  if ((target === WEB_ROOT || target.startsWith(`${WEB_ROOT}/`)) && !target.split('/').includes('..')) return undefined;
  return {
    message: `must be a directory under ${WEB_ROOT} (where spec.webVolume is mounted), got ${JSON.stringify(target)}`,
    code: 'invalid',
  };
}

/**
 * The OAuth sidecar's config file: a share pod's `oauth:` section made for this share alone (its
 * derived keys, no client secret, the auth endpoint's internal URL and its credential there;
 * lib/config/share-pod.ts), listening on the pod's frontend port, and this one share, proxied to the
 * target itself (a `proxy` share) or to the agent's file server on loopback (a `web` share). No
 * installation-wide secret goes into the share's namespace.
 */
function sidecarConfig(share: ValidShare, installation: Installation): Record<string, unknown> {
  const identity = { token: share.token, instance: share.instance };
  const section = sharePodOAuthSection(installation.section, installation.oauth, identity, installation.authServiceUrl);
  return {
    oauth: { ...section, bind_address: `0.0.0.0:${FRONTEND_PORT}` },
    shares: [shareEntry(share, share.backendMode === 'proxy' ? share.target : `http://127.0.0.1:${AGENT_PORT}`)],
    metrics_address: `0.0.0.0:${FRONTEND_METRICS_PORT}`,
  };
}

/** A share's entry in a frontend config's `shares:` list (seed option names). */
export function shareEntry(share: ValidShare, target: string): Record<string, unknown> {
  if (!share.oauth) return { token: share.token, instance: share.instance, target };
  return {
    token: share.token,
    instance: share.instance,
    target,
    oauth_provider: share.oauth.provider,
    ...(share.oauth.emailAddressPatterns.length > 0
      ? { oauth_email_address_patterns: share.oauth.emailAddressPatterns }
      : {}),
    oauth_check_interval: share.oauth.checkInterval,
  };
}

export interface ShareChildren {
  readonly deployment: KubeObject;
  readonly service: KubeObject;
  /** Public shares only, without `--share-http-route`. */
  readonly ingress?: KubeObject;
  /** Public shares only, with `--share-http-route`: a Gateway API HTTPRoute instead of the Ingress. */
  readonly route?: KubeObject;
  /** OAuth shares only: the sidecar's config. */
  readonly secret?: KubeObject;
}

export interface ShareChildOptions {
  readonly image: string;
  readonly domain: string;
  readonly ingress?: ShareIngressOptions;
  readonly installation?: Installation;
  /** The installation's share pod settings (pull secrets, scheduling, resources, labels). */
  readonly pods?: PodSettings;
}

/** Everything a Share is reconciled into (docs/operator.md, "Share children"). */
export function desiredShareChildren(owner: Share, share: ValidShare, options: ShareChildOptions): ShareChildren {
  const name = childName(share.name);
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY, [SHARE_LABEL]: share.name };
  const metadata = (objectName: string): KubeObject['metadata'] => ({
    name: objectName,
    namespace: share.namespace,
    labels,
    ownerReferences: [ownerReference(SHARES, owner)],
  });
  const installation = share.oauth !== undefined ? options.installation : undefined;
  const deployment = applyPodSettings(
    podDeployment(
      metadata(name),
      { [SHARE_LABEL]: share.name },
      labels,
      'share',
      sharePod(share, options.image, !!installation),
    ),
    options.pods,
  );
  const children: { -readonly [K in keyof ShareChildren]: ShareChildren[K] } = {
    deployment,
    service: shareService(metadata(name), share.name, !!installation),
  };
  const host = `${share.token}.${options.domain}`;
  if (share.shareMode === 'public' && options.ingress?.route) {
    children.route = desiredShareRoute(metadata(name), host, name, options.ingress.route);
  } else if (share.shareMode === 'public') {
    children.ingress = shareIngress(metadata(name), host, options.ingress);
  }
  if (installation) {
    // JSON, which is YAML too: the sidecar then never loads a YAML parser (lib/config-reader.ts).
    const config = JSON.stringify(sidecarConfig(share, installation), null, 2);
    children.secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: metadata(frontendSecretName(share.name)),
      type: 'Opaque',
      data: { [FRONTEND_CONFIG_FILE]: Buffer.from(config).toString('base64') },
    };
  }
  return children;
}

/**
 * The share pod: the agent serving the target (or the web volume), and for an OAuth share the
 * sidecar frontend in front of it, the only one reachable from outside the pod.
 */
function sharePod(
  share: ValidShare,
  image: string,
  oauth: boolean,
): { containers: Record<string, unknown>[]; volumes: Record<string, unknown>[] } {
  const volumes: Record<string, unknown>[] = [tmpVolume];
  if (share.webVolume) volumes.push(webVolume(share.webVolume));
  // An OAuth `proxy` share needs no agent container: the sidecar proxies to the target through the
  // same pipe the agent would, and a second hop cost about twice the CPU per request and a second
  // process's memory (docs/operator.md, "Share children"; docs/benchmarks.md, "Share pods").
  const containers: Record<string, unknown>[] =
    oauth && share.backendMode === 'proxy' ? [] : [agentContainer(share, image, oauth)];
  if (oauth) {
    volumes.push({ name: 'frontend-config', secret: { secretName: frontendSecretName(share.name) } });
    containers.push(frontendContainer(image));
  }
  return { containers, volumes };
}

/** The web share's files: a ConfigMap or a read-only PersistentVolumeClaim. */
function webVolume(volume: NonNullable<ValidShare['webVolume']>): Record<string, unknown> {
  return volume.configMap
    ? { name: 'share', configMap: { name: volume.configMap } }
    : { name: 'share', persistentVolumeClaim: { claimName: volume.persistentVolumeClaim, readOnly: true } };
}

/**
 * `svc agent backend` proxying to the target or serving the web volume: on loopback behind the
 * sidecar of an OAuth share (identity headers passed on), otherwise the pod's port (headers stripped).
 */
function agentContainer(share: ValidShare, image: string, oauth: boolean): Record<string, unknown> {
  const args = [
    'agent',
    'backend',
    '--backend-mode',
    share.backendMode,
    '--target',
    share.target,
    '--listen',
    oauth ? `127.0.0.1:${AGENT_PORT}` : `0.0.0.0:${AGENT_PORT}`,
    '--identity-headers',
    oauth ? 'pass' : 'strip',
  ];
  const volumeMounts: Record<string, unknown>[] = [tmpMount];
  if (share.webVolume) volumeMounts.push({ name: 'share', mountPath: WEB_ROOT, readOnly: true });
  const agent: Record<string, unknown> = {
    name: 'agent',
    image,
    args,
    securityContext: containerSecurityContext,
    resources: agentResources,
    volumeMounts,
  };
  if (!oauth) {
    agent.ports = [{ name: 'http', containerPort: AGENT_PORT, protocol: 'TCP' }];
    agent.readinessProbe = { tcpSocket: { port: AGENT_PORT }, periodSeconds: 10 };
  }
  return agent;
}

/** The OAuth sidecar (`svc frontend`) reading its config from the share's frontend Secret. */
function frontendContainer(image: string): Record<string, unknown> {
  return {
    name: 'frontend',
    image,
    args: ['frontend', '--config', `${FRONTEND_CONFIG_DIR}/${FRONTEND_CONFIG_FILE}`],
    ports: [
      { name: 'http', containerPort: FRONTEND_PORT, protocol: 'TCP' },
      { name: 'metrics', containerPort: FRONTEND_METRICS_PORT, protocol: 'TCP' },
    ],
    readinessProbe: { httpGet: { path: '/readyz', port: FRONTEND_METRICS_PORT }, periodSeconds: 10 },
    livenessProbe: { httpGet: { path: '/healthz', port: FRONTEND_METRICS_PORT }, periodSeconds: 20 },
    securityContext: containerSecurityContext,
    resources: agentResources,
    volumeMounts: [tmpMount, { name: 'frontend-config', mountPath: FRONTEND_CONFIG_DIR, readOnly: true }],
  };
}

/** The share's ClusterIP Service on port 80: to the sidecar of an OAuth share, else to the agent. */
function shareService(metadata: KubeObject['metadata'], shareName: string, oauth: boolean): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'ClusterIP',
      selector: { [SHARE_LABEL]: shareName },
      ports: [{ name: 'http', port: 80, targetPort: oauth ? FRONTEND_PORT : AGENT_PORT, protocol: 'TCP' }],
    },
  };
}

/** A public share's Ingress: its host to the share Service, with the class, annotations and TLS of `--ingress-*`. */
function shareIngress(
  metadata: KubeObject['metadata'],
  host: string,
  ingress: ShareIngressOptions | undefined,
): KubeObject {
  const name = metadata.name;
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      ...metadata,
      ...(ingress && Object.keys(ingress.annotations).length > 0 ? { annotations: { ...ingress.annotations } } : {}),
    },
    spec: {
      ...(ingress?.className ? { ingressClassName: ingress.className } : {}),
      ...withTls(ingressTls(ingress?.tls, host, name)),
      rules: [
        {
          host,
          http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }] },
        },
      ],
    },
  };
}

function withTls(tls: object[] | undefined): { tls?: object[] } {
  return tls ? { tls } : {};
}
