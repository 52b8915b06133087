/**
 * Shared set-up of the operator integration tests: a real control plane with the CRDs, the
 * installation's frontend Secret, and operators started in-process against it (their logs captured
 * so tests can check what was — and was not — logged). Assertions read the API through
 * `rawRequest`, independent of the operator's own client.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { stringify as toYaml } from 'yaml';
import { createLogger } from '../../lib/logger.ts';
import { startOperator, type RunningOperator, type StartOperatorOptions } from '../../operator/operator.ts';
import { parseOperatorFlags } from '../../operator/options.ts';
import { startControlPlane, type ControlPlane, type ControlPlaneOptions } from './envtest.ts';
import { ApiError, rawRequest } from './raw.ts';
import { DOMAIN, oauthSection } from '../support/installation-oauth.ts';
import { until } from '../support/until.ts';
import { availableDeploymentStatus } from '../support/deployment-status.ts';

const CRD_DIR = join(import.meta.dirname, '..', '..', 'crds');
export const CRD_FILES = readdirSync(CRD_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => join(CRD_DIR, f));

export const RELEASE_NS = 'svc-system';
export const NS = 'default';
export { DOMAIN, SECRET_VALUES, oauthSection } from '../support/installation-oauth.ts';
export const IMAGE = 'ghcr.io/example/svc:test';

export async function startCluster(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const cp = await startControlPlane({ crds: CRD_FILES, ...options });
  await api(cp, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: RELEASE_NS } } });
  await writeFrontendSecret(cp, oauthSection());
  return cp;
}

export async function writeFrontendSecret(cp: ControlPlane, section: Record<string, unknown>): Promise<void> {
  await api(cp, `/api/v1/namespaces/${RELEASE_NS}/secrets/svc-frontend?fieldManager=test&force=true`, {
    method: 'PATCH',
    contentType: 'application/apply-patch+yaml',
    body: {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'svc-frontend', namespace: RELEASE_NS },
      stringData: { 'oauth.yaml': toYaml({ oauth: section }) },
    },
  });
}

export interface TestOperator extends RunningOperator {
  logs(): string;
}

export async function startTestOperator(
  cp: ControlPlane,
  overrides: Partial<StartOperatorOptions> & { leaderElect?: boolean } = {},
): Promise<TestOperator> {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      if (process.env.SVC_TEST_OPERATOR_LOGS) process.stderr.write(chunk);
      cb();
    },
  });
  const flags = parseOperatorFlags({
    namespaceScope: 'all',
    frontendSecret: `${RELEASE_NS}/svc-frontend`,
    shareDomain: DOMAIN,
    image: IMAGE,
    metricsListen: '127.0.0.1:0',
    leaderElect: overrides.leaderElect ?? false,
  });
  const operator = await startOperator({
    ...flags,
    kubeConfig: cp.kubeConfig,
    logger: createLogger('svc-operator', { level: 'debug', destination }),
    ...overrides,
  });
  return Object.assign(operator, { logs: () => chunks.join('') });
}

export type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    ownerReferences?: { kind: string; name: string; controller?: boolean }[];
    managedFields?: { manager: string }[];
    labels?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  data?: Record<string, string>;
  [k: string]: unknown;
};

export async function api(
  cp: ControlPlane,
  path: string,
  options: Parameters<typeof rawRequest>[2] = {},
): Promise<Obj> {
  return (await rawRequest(cp.kubeConfig, path, options)) as Obj;
}

/** The object at `path`, or undefined when it does not exist. */
export async function getOrNone(cp: ControlPlane, path: string): Promise<Obj | undefined> {
  try {
    return await api(cp, path);
  } catch (err) {
    if (err instanceof ApiError && err.code === 404) return undefined;
    throw err;
  }
}

export const paths = {
  share: (name: string, ns = NS) => `/apis/svc.dev/v1alpha1/namespaces/${ns}/shares/${name}`,
  shares: (ns = NS) => `/apis/svc.dev/v1alpha1/namespaces/${ns}/shares`,
  access: (name: string, ns = NS) => `/apis/svc.dev/v1alpha1/namespaces/${ns}/accesses/${name}`,
  accesses: (ns = NS) => `/apis/svc.dev/v1alpha1/namespaces/${ns}/accesses`,
  deployment: (name: string, ns = NS) => `/apis/apps/v1/namespaces/${ns}/deployments/${name}`,
  service: (name: string, ns = NS) => `/api/v1/namespaces/${ns}/services/${name}`,
  ingress: (name: string, ns = NS) => `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses/${name}`,
  secret: (name: string, ns = NS) => `/api/v1/namespaces/${ns}/secrets/${name}`,
  events: (ns = NS) => `/api/v1/namespaces/${ns}/events`,
  lease: () => `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases/svc-operator`,
};

export async function createShare(cp: ControlPlane, name: string, spec: Record<string, unknown>): Promise<Obj> {
  return await api(cp, paths.shares(), {
    method: 'POST',
    body: { apiVersion: 'svc.dev/v1alpha1', kind: 'Share', metadata: { name, namespace: NS }, spec },
  });
}

export async function createAccess(cp: ControlPlane, name: string, spec: Record<string, unknown>): Promise<Obj> {
  return await api(cp, paths.accesses(), {
    method: 'POST',
    body: { apiVersion: 'svc.dev/v1alpha1', kind: 'Access', metadata: { name, namespace: NS }, spec },
  });
}

export async function mergePatch(cp: ControlPlane, path: string, patch: unknown): Promise<Obj> {
  return await api(cp, path, { method: 'PATCH', contentType: 'application/merge-patch+json', body: patch });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value that is not undefined/false; fails with the last error. */
export function eventually<T>(
  probe: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 20_000,
): Promise<T> {
  return until(probe, what, timeoutMs);
}

export function condition(
  obj: Obj | undefined,
  type: string,
): { status: string; reason: string; message: string; observedGeneration?: number } | undefined {
  const list = (obj?.status?.conditions ?? []) as {
    type: string;
    status: string;
    reason: string;
    message: string;
    observedGeneration?: number;
  }[];
  return list.find((c) => c.type === type);
}

/**
 * Reports the Deployment's pod available (`availableDeploymentStatus` in its status subresource). No-op
 * while the Deployment does not exist or already says so.
 */
export async function markAvailable(cp: ControlPlane, deploymentName: string, ns = NS): Promise<void> {
  const d = await getOrNone(cp, paths.deployment(deploymentName, ns));
  if (!d) return;
  const generation = d.metadata.generation ?? 1;
  const status = d.status as { observedGeneration?: number; availableReplicas?: number } | undefined;
  if (status?.observedGeneration === generation && (status.availableReplicas ?? 0) >= 1) return;
  await api(cp, `${paths.deployment(deploymentName, ns)}/status`, {
    method: 'PATCH',
    contentType: 'application/merge-patch+json',
    body: { status: availableDeploymentStatus(generation) },
  });
}

/**
 * Waits for the Share to be Ready (at `generation`), reporting its pod available meanwhile;
 * `timeoutMs` longer where the operator first has to notice a lost watch and relist.
 */
export async function readyShare(
  cp: ControlPlane,
  name: string,
  generation?: number,
  timeoutMs?: number,
): Promise<Obj> {
  return await eventually(
    async () => {
      await markAvailable(cp, `svc-share-${name}`);
      const s = await getOrNone(cp, paths.share(name));
      const ready = condition(s, 'Ready');
      if (ready?.status !== 'True') return undefined;
      if (generation !== undefined && s?.status?.observedGeneration !== generation) return undefined;
      return s;
    },
    `Share ${name} Ready${generation ? ` at generation ${generation}` : ''}`,
    timeoutMs,
  );
}

export function container(
  deployment: Obj | undefined,
  name: string,
):
  | { args: string[]; ports?: { containerPort: number }[]; volumeMounts?: { name: string; mountPath: string }[] }
  | undefined {
  const spec = deployment?.spec as
    { template: { spec: { containers: { name: string; args: string[] }[] } } } | undefined;
  return spec?.template.spec.containers.find((c) => c.name === name);
}

export function decodeSecret(secret: Obj | undefined, key: string): string {
  const value = secret?.data?.[key];
  if (value === undefined) throw new Error(`secret has no key ${key}`);
  return Buffer.from(value, 'base64').toString('utf8');
}
