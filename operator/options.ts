import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { ConfigReader } from '../lib/config-reader.ts';
import { ConfigError } from '../lib/errors.ts';
import type { ListenAddress } from '../lib/listen.ts';
import { parseShareTls, type ShareTls } from './share-tls.ts';
import { parsePodSettings, type PodSettings } from './pod-settings.ts';
import { parseShareRoute, type ShareRouteOptions } from './share-route.ts';
import { DEFAULT_AUTH_SHARE_QUOTA_BYTES, MIN_AUTH_SHARE_QUOTA_BYTES } from './auth-quota.ts';
import { AUTH_SHARDS, MAX_SECRET_BYTES } from './auth-shards.ts';

/** Validated operator settings (docs/operator.md; flags in `cli/operator.ts`). */
export interface OperatorOptions {
  /** Namespace to watch; undefined = all namespaces. */
  readonly namespace?: string;
  /** The installation's frontend Secret (`<release>-frontend`, key `oauth.yaml`). */
  readonly frontendSecret: { namespace: string; name: string };
  /** The auth endpoint's config Secret the operator keeps (`<release>-auth-frontend`). */
  readonly authSecret: { namespace: string; name: string };
  readonly shareDomain: string;
  /** How share Ingresses are served: class and annotations (e.g. cert-manager's) copied onto each. */
  readonly ingress: ShareIngressOptions;
  readonly image: string;
  /** Settings of the share, access and environment-agent pods (`--pod-settings`); {} = none. */
  readonly podSettings: PodSettings;
  readonly leaderElect: boolean;
  /** Lease used for leader election: `--lease-name` (default `svc-operator`) in the frontend Secret's namespace. */
  readonly lease: { namespace: string; name: string };
  readonly identity: string;
  readonly metricsListen: ListenAddress;
  readonly concurrency: number;
  /** Deadline of one Kubernetes API call (`--kube-request-timeout`); default 30 s. */
  readonly requestTimeoutMs?: number;
  /**
   * How long after an AgentEnrollment's deletion the operator keeps trying to unenroll it at an
   * unreachable controller before it drops the finalizer anyway (with a Warning Event).
   */
  readonly unenrollDeadlineMs: number;
  /** Bytes of the auth endpoint's share list one namespace's OAuth Shares may take (`--auth-share-quota`). */
  readonly authShareQuotaBytes?: number;
  /** Hosts of the installation no Share's token may take (`--reserved-host`; lib/share/reserved-tokens.ts). */
  readonly reservedHosts?: readonly string[];
}

export interface ShareIngressOptions {
  readonly className?: string;
  readonly annotations: Readonly<Record<string, string>>;
  /**
   * The ingress controller writes a load-balancer address into each Ingress it admits: a Share is
   * Ready only once its Ingress has one. Off by default, since many controllers never write it.
   */
  readonly awaitAddress?: boolean;
  /** TLS of share hosts; absent = none (share URLs are http). */
  readonly tls?: ShareTls;
  /**
   * Share hosts are served by Gateway API HTTPRoutes instead of Ingresses (`--share-http-route`);
   * class, annotations, address and TLS above then do not apply.
   */
  readonly route?: ShareRouteOptions;
}

export interface OperatorFlags {
  namespaceScope?: string;
  frontendSecret?: string;
  authSecret?: string;
  shareDomain?: string;
  ingressClass?: string;
  ingressAnnotation?: string[];
  ingressAwaitAddress?: boolean;
  ingressTls?: string;
  shareHttpRoute?: string;
  leaseName?: string;
  unenrollDeadline?: string;
  image?: string;
  podSettings?: string;
  leaderElect?: boolean;
  metricsListen?: string;
  concurrency?: string;
  kubeRequestTimeout?: string;
  authShareQuota?: string;
  reservedHost?: string[];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Validates the `svc operator` flags, reporting every problem at once. */
export function parseOperatorFlags(flags: OperatorFlags): OperatorOptions {
  const r = new ConfigReader();
  const scope = flags.namespaceScope ?? '';
  if (!scope) r.problem('--namespace-scope', 'required (a namespace, or "all")', 'required');
  else if (scope !== 'all' && (!DNS_LABEL.test(scope) || scope.length > 63))
    r.problem('--namespace-scope', `must be a namespace name or "all", got ${JSON.stringify(scope)}`);
  const frontendSecret = namespacedName(flags.frontendSecret, '--frontend-secret', r);
  let authSecret = flags.authSecret ? namespacedName(flags.authSecret, '--auth-secret', r) : undefined;
  if (!authSecret && frontendSecret) {
    const release = frontendSecret.name.replace(/-frontend$/, '');
    authSecret = { namespace: frontendSecret.namespace, name: `${release}-auth-frontend` };
  }
  const shareDomain = (flags.shareDomain ?? '').toLowerCase();
  if (!shareDomain) r.problem('--share-domain', 'required (share hosts are <token>.<domain>)', 'required');
  else if (!DNS_SUBDOMAIN.test(shareDomain) || shareDomain.length > 190)
    r.problem('--share-domain', `must be a DNS domain such as share.example.com, got ${JSON.stringify(shareDomain)}`);
  const { ingressClass, annotations, tls, route } = readIngressFlags(flags, r);
  const leaseName = flags.leaseName ?? 'svc-operator';
  if (!DNS_SUBDOMAIN.test(leaseName) || leaseName.length > 253)
    r.problem('--lease-name', `must be a Lease name, got ${JSON.stringify(leaseName)}`);
  const unenrollDeadlineMs = parseMinutes(flags.unenrollDeadline ?? '10m');
  if (unenrollDeadlineMs === undefined)
    r.problem(
      '--unenroll-deadline',
      `must be minutes such as 10m (at least 1m), got ${JSON.stringify(flags.unenrollDeadline)}`,
    );
  const image = flags.image ?? '';
  if (!image) r.problem('--image', 'required (the svc container image the share pods run)', 'required');
  else if (/\s/.test(image)) r.problem('--image', 'must not contain whitespace');
  const podSettings = parsePodSettings(flags.podSettings, r.problems);
  const metricsListen = r.listenAddress(flags.metricsListen ?? '0.0.0.0:8080', '--metrics-listen');
  const { concurrency, requestTimeoutS, authShareQuotaBytes, reservedHosts } = readLimitFlags(flags, r);
  if (
    r.problems.length > 0 ||
    !frontendSecret ||
    !authSecret ||
    !metricsListen ||
    typeof tls === 'string' ||
    unenrollDeadlineMs === undefined
  )
    throw new ConfigError('svc operator flags', r.problems);
  return {
    ...(scope === 'all' ? {} : { namespace: scope }),
    frontendSecret,
    authSecret,
    shareDomain,
    ingress: {
      ...(ingressClass ? { className: ingressClass } : {}),
      annotations,
      tls,
      ...(flags.ingressAwaitAddress ? { awaitAddress: true } : {}),
      ...(route ? { route } : {}),
    },
    image,
    podSettings,
    leaderElect: flags.leaderElect ?? false,
    lease: { namespace: frontendSecret.namespace, name: leaseName },
    identity: `${hostname()}_${randomBytes(4).toString('hex')}`,
    metricsListen,
    concurrency,
    requestTimeoutMs: requestTimeoutS * 1000,
    unenrollDeadlineMs,
    authShareQuotaBytes,
    reservedHosts,
  };
}

/** The flags of the operator's share Ingresses or HTTPRoutes. */
function readIngressFlags(flags: OperatorFlags, r: ConfigReader) {
  const ingressClass = flags.ingressClass ?? '';
  if (ingressClass && (!DNS_SUBDOMAIN.test(ingressClass) || ingressClass.length > 253))
    r.problem('--ingress-class', `must be an IngressClass name, got ${JSON.stringify(ingressClass)}`);
  const annotations: Record<string, string> = {};
  for (const pair of flags.ingressAnnotation ?? []) {
    const eq = pair.indexOf('=');
    if (eq <= 0) r.problem('--ingress-annotation', `must be key=value, got ${JSON.stringify(pair)}`);
    else annotations[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  const tls = parseShareTls(flags.ingressTls ?? 'none');
  if (typeof tls === 'string') r.problem('--ingress-tls', tls);
  const route = parseShareRoute(flags.shareHttpRoute, r.problems);
  return { ingressClass, annotations, tls, route };
}

/** Work-queue, API and share-list limits, and the hosts no Share may take. */
function readLimitFlags(flags: OperatorFlags, r: ConfigReader) {
  const concurrency = Number(flags.concurrency ?? '16');
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)
    r.problem('--concurrency', 'must be an integer 1-64');
  const requestTimeoutS = Number(flags.kubeRequestTimeout ?? '30');
  if (!Number.isInteger(requestTimeoutS) || requestTimeoutS < 1 || requestTimeoutS > 600)
    r.problem('--kube-request-timeout', `must be whole seconds 1-600, got ${JSON.stringify(flags.kubeRequestTimeout)}`);
  const authShareQuotaBytes = Number(flags.authShareQuota ?? DEFAULT_AUTH_SHARE_QUOTA_BYTES);
  const maxQuota = AUTH_SHARDS * MAX_SECRET_BYTES;
  if (
    !Number.isInteger(authShareQuotaBytes) ||
    authShareQuotaBytes < MIN_AUTH_SHARE_QUOTA_BYTES ||
    authShareQuotaBytes > maxQuota
  )
    r.problem(
      '--auth-share-quota',
      `must be whole bytes ${MIN_AUTH_SHARE_QUOTA_BYTES}-${maxQuota}, got ${JSON.stringify(flags.authShareQuota)}`,
    );
  const reservedHosts = (flags.reservedHost ?? []).map((h) => h.toLowerCase());
  for (const host of reservedHosts)
    if (!DNS_SUBDOMAIN.test(host) || host.length > 253)
      r.problem('--reserved-host', `must be a host name such as api.share.example.com, got ${JSON.stringify(host)}`);
  return { concurrency, requestTimeoutS, authShareQuotaBytes, reservedHosts };
}

/** `<n>m` (whole minutes, at least one) in milliseconds; undefined when malformed. */
function parseMinutes(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,4})m$/.exec(text);
  return match ? Number(match[1]) * 60_000 : undefined;
}

function namespacedName(
  text: string | undefined,
  flag: string,
  r: ConfigReader,
): { namespace: string; name: string } | undefined {
  if (!text) {
    r.problem(flag, 'required as <namespace>/<name>', 'required');
    return undefined;
  }
  const [namespace, name, ...rest] = text.split('/');
  if (!namespace || !name || rest.length > 0 || !DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(name)) {
    r.problem(flag, `must be <namespace>/<name>, got ${JSON.stringify(text)}`);
    return undefined;
  }
  return { namespace, name };
}
