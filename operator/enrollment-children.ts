import type { EnrollmentFile } from '../lib/remoting/files.ts';
import type { ConditionReason } from '../lib/error-codes.ts';
import { SvcError, problem, type Problem, type Result } from '../lib/errors.ts';
import { agentResources, containerSecurityContext, podSecurityContext, tmpMount, tmpVolume } from './pod.ts';
import { applyPodSettings, type PodSettings } from './pod-settings.ts';
import {
  AGENT_ENROLLMENTS,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  ownerReference,
  type Condition,
  type KubeObject,
} from '../lib/kube/resources.ts';

export interface AgentEnrollmentSpec {
  controllerUrl?: string;
  accountTokenSecretRef?: { name?: string; key?: string };
  description?: string;
}

export interface AgentEnrollmentStatus {
  envZId?: string;
  enrolled?: boolean;
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface AgentEnrollment extends KubeObject {
  spec?: AgentEnrollmentSpec;
  status?: AgentEnrollmentStatus;
}

/** The environment agent's /healthz and /readyz (ready = connected to the controller). */
const ENVIRONMENT_AGENT_HEALTH_PORT = 8081;
/** On an AgentEnrollment while the controller still holds its environment (the one finalizer svc uses). */
export const UNENROLL_FINALIZER = 'svc.dev/unenroll';
const ENROLLMENT_LABEL = 'svc.dev/agent-enrollment';
/** Keys of the enrollment state Secret. `agent-enrollment.json` is the only one the agent pod mounts. */
export const ENROLLMENT_FILE_KEY = 'agent-enrollment.json';
const ENROLLMENT_MOUNT = '/etc/svc/enrollment';
/** The image's user and group (Dockerfile `USER 1000:1000`): fsGroup makes the Secret volume readable. */
const POD_GROUP = 1000;

/** Names of everything an AgentEnrollment N is reconciled into. */
export function enrollmentChildName(name: string): string {
  return `svc-agent-${name}`;
}
export function enrollmentSecretName(name: string): string {
  return `${enrollmentChildName(name)}-enrollment`;
}

const MAX_NAME = 63 - 'svc-agent-'.length;

/** What the operator keeps in the enrollment Secret (never in status, Events or logs). */
export interface EnrollmentState {
  /** Origin of the controller the environment was enabled at. */
  readonly controllerUrl: string;
  readonly envZId: string;
  /** Present once enrolled: the agent's enrollment file, holding the enrollment token and pinned identity. */
  readonly enrollment?: EnrollmentFile;
}

export interface ValidEnrollment {
  readonly controllerUrl: string;
  readonly secretName: string;
  readonly secretKey: string;
  readonly description: string;
}

/** Checks what the CRD cannot; every problem with its field path. */
export function validateEnrollment(e: AgentEnrollment): Result<ValidEnrollment> {
  const problems: Problem[] = [];
  if (e.metadata.name.length > MAX_NAME) {
    problems.push(
      problem(
        'metadata.name',
        `at most ${MAX_NAME} characters (it names the Deployment ${enrollmentChildName(e.metadata.name)})`,
      ),
    );
  }
  const spec = e.spec ?? {};
  let controllerUrl = '';
  try {
    const url = new URL(spec.controllerUrl ?? '');
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) throw new Error('scheme');
    if (url.pathname !== '/' && url.pathname !== '') {
      problems.push(
        problem('spec.controllerUrl', 'must be the controller base URL without a path (the API is at /api/v1)'),
      );
    }
    controllerUrl = url.origin;
  } catch {
    problems.push(
      problem(
        'spec.controllerUrl',
        `must be an absolute http or https URL, got ${JSON.stringify(spec.controllerUrl ?? '')}`,
      ),
    );
  }
  const secretName = spec.accountTokenSecretRef?.name ?? '';
  const secretKey = spec.accountTokenSecretRef?.key ?? '';
  if (!secretName) problems.push(problem('spec.accountTokenSecretRef.name', 'required', 'required'));
  if (!secretKey) problems.push(problem('spec.accountTokenSecretRef.key', 'required', 'required'));
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { controllerUrl, secretName, secretKey, description: spec.description ?? '' } };
}

/** The Secret's data → state; undefined when it holds none (or garbage, which is then replaced). */
export function readEnrollmentState(data: Record<string, string> | undefined): EnrollmentState | undefined {
  const text = (key: string): string | undefined =>
    data?.[key] === undefined ? undefined : Buffer.from(data[key] ?? '', 'base64').toString('utf8');
  const controllerUrl = text('controllerUrl');
  const envZId = text('envZId');
  if (!controllerUrl || !envZId) return undefined;
  const file = text(ENROLLMENT_FILE_KEY);
  let enrollment: EnrollmentFile | undefined;
  if (file) {
    try {
      const parsed = JSON.parse(file) as EnrollmentFile;
      if (parsed.version === 1 && parsed.envZId === envZId && typeof parsed.token === 'string') enrollment = parsed;
    } catch {
      enrollment = undefined;
    }
  }
  return { controllerUrl, envZId, ...(enrollment ? { enrollment } : {}) };
}

export function enrollmentSecret(owner: AgentEnrollment, state: EnrollmentState): KubeObject {
  const data: Record<string, string> = {
    controllerUrl: b64(state.controllerUrl),
    envZId: b64(state.envZId),
    ...(state.enrollment ? { [ENROLLMENT_FILE_KEY]: b64(`${JSON.stringify(state.enrollment, null, 2)}\n`) } : {}),
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: metadata(owner, enrollmentSecretName(owner.metadata.name)),
    type: 'Opaque',
    data,
  };
}

/**
 * The environment agent: a ServiceAccount whose Role allows Shares and Accesses in this namespace
 * and nothing else, bound to it, and a one-replica Deployment running
 * `svc agent environment --namespace <ns> --enrollment-file <mounted Secret>`. The pod template
 * carries the enrollment id, so a new enrollment rolls the pod.
 */
export function desiredEnvironmentAgent(
  owner: AgentEnrollment,
  enrollment: EnrollmentFile,
  image: string,
  pods?: PodSettings,
): { serviceAccount: KubeObject; role: KubeObject; roleBinding: KubeObject; deployment: KubeObject } {
  const name = enrollmentChildName(owner.metadata.name);
  const namespace = owner.metadata.namespace ?? '';
  const serviceAccount: KubeObject = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(owner, name),
  };
  const role: KubeObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: metadata(owner, name),
    rules: [
      {
        apiGroups: ['svc.dev'],
        resources: ['shares', 'accesses'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
      },
    ],
  };
  const roleBinding: KubeObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: metadata(owner, name),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  };
  const deployment = applyPodSettings(environmentAgentDeployment(owner, enrollment, image), pods);
  return { serviceAccount, role, roleBinding, deployment };
}

/**
 * One replica of the environment agent under its ServiceAccount, the enrollment file mounted from
 * the state Secret, and the enrollment id on the pod template.
 */
function environmentAgentDeployment(owner: AgentEnrollment, enrollment: EnrollmentFile, image: string): KubeObject {
  const name = enrollmentChildName(owner.metadata.name);
  const selector = { [ENROLLMENT_LABEL]: owner.metadata.name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: metadata(owner, name),
    spec: {
      replicas: 1,
      // One remoting connection per environment: never two pods at once.
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selector },
      template: {
        metadata: {
          labels: {
            [MANAGED_BY_LABEL]: MANAGED_BY,
            ...selector,
            'app.kubernetes.io/name': 'svc-environment-agent',
            'app.kubernetes.io/component': 'environment-agent',
          },
          annotations: { 'svc.dev/enrollment-id': enrollment.enrollmentId },
        },
        spec: {
          serviceAccountName: name,
          automountServiceAccountToken: true,
          enableServiceLinks: false,
          securityContext: { ...podSecurityContext, fsGroup: POD_GROUP },
          containers: [environmentAgentContainer(owner.metadata.namespace ?? '', image)],
          volumes: [
            tmpVolume,
            {
              name: 'enrollment',
              secret: {
                secretName: enrollmentSecretName(owner.metadata.name),
                defaultMode: 0o440,
                items: [{ key: ENROLLMENT_FILE_KEY, path: ENROLLMENT_FILE_KEY }],
              },
            },
          ],
        },
      },
    },
  };
}

/** `svc agent environment` for one namespace, with its health port probed. */
function environmentAgentContainer(namespace: string, image: string): Record<string, unknown> {
  return {
    name: 'agent',
    image,
    args: [
      'agent',
      'environment',
      '--namespace',
      namespace,
      '--enrollment-file',
      `${ENROLLMENT_MOUNT}/${ENROLLMENT_FILE_KEY}`,
      '--health-listen',
      `0.0.0.0:${ENVIRONMENT_AGENT_HEALTH_PORT}`,
    ],
    ports: [{ name: 'health', containerPort: ENVIRONMENT_AGENT_HEALTH_PORT, protocol: 'TCP' }],
    readinessProbe: { httpGet: { path: '/readyz', port: 'health' }, periodSeconds: 10 },
    livenessProbe: { httpGet: { path: '/healthz', port: 'health' }, periodSeconds: 20 },
    securityContext: containerSecurityContext,
    resources: agentResources,
    volumeMounts: [tmpMount, { name: 'enrollment', mountPath: ENROLLMENT_MOUNT, readOnly: true }],
  };
}

/**
 * Maps a failed controller call to the Ready condition's reason. `ControllerUnreachable` and
 * `EnrollmentFailed` are retried with backoff; an invalid account token or a controller without
 * remoting wait for a change (and are re-checked every minute, as the token Secret is not watched).
 */
export function controllerFailure(err: unknown): { reason: ConditionReason; retry: boolean } {
  const code = err instanceof SvcError ? err.code : '';
  if (code === 'controller_unreachable' || code === 'bad_response')
    return { reason: 'ControllerUnreachable', retry: true };
  if (code === 'unauthorized') return { reason: 'AccountTokenInvalid', retry: false };
  if (code === 'agent_controller_not_configured') return { reason: 'RemotingNotConfigured', retry: false };
  return { reason: 'EnrollmentFailed', retry: true };
}

function metadata(owner: AgentEnrollment, name: string): KubeObject['metadata'] {
  return {
    name,
    namespace: owner.metadata.namespace ?? '',
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [ENROLLMENT_LABEL]: owner.metadata.name },
    ownerReferences: [ownerReference(AGENT_ENROLLMENTS, owner)],
  };
}

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
