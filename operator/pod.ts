/**
 * Pieces every pod the operator writes shares: one image for all roles (the role is the `svc`
 * subcommand in `args`; the image's entrypoint is `svc`), non-root, read-only root filesystem, no
 * privilege escalation, no capabilities, no service-account token (the agents never call the API).
 */
import type { KubeObject } from '../lib/kube/resources.ts';

export const AGENT_PORT = 9000;
export const FRONTEND_PORT = 8080;
export const FRONTEND_METRICS_PORT = 9090;
export const FRONTEND_CONFIG_DIR = '/etc/svc/frontend';
export const FRONTEND_CONFIG_FILE = 'config.yaml';
export const WEB_ROOT = '/srv/share';

/** The image's entrypoint (Dockerfile `ENTRYPOINT`, kept in step by test/k8s/dockerfile.test.ts). */
export const IMAGE_ENTRYPOINT = ['node', '--no-maglev', '/app/bin/svc.js'] as const;

/**
 * V8 flags of a share's sidecar container only, after the entrypoint's: V8's memory saver mode (the
 * old generation collected after 2 MiB of growth, not 8), without its memory reducer (which keeps
 * starting collections while the process allocates fast) and with the young generation held at
 * the image's 2 MiB (memory saver shrinks it back). Measured in pairs: peak RSS 82.9 → 78.4 and
 * 83.5 → 78.4 MiB at 1.010× and 1.046× the CPU per request; memory saver alone cost 1.22–1.25×
 * (docs/benchmarks.md, round 8). Node refuses these in NODE_OPTIONS, so the container gets a
 * command of its own, and the image fills a second compile cache keyed by them.
 */
export const SIDECAR_NODE_FLAGS = ['--memory-saver-mode', '--no-memory-reducer', '--min-semi-space-size=2'] as const;

/** The share sidecar container's command: the entrypoint with SIDECAR_NODE_FLAGS added. */
export const SIDECAR_COMMAND: readonly string[] = [
  ...IMAGE_ENTRYPOINT.slice(0, -1),
  ...SIDECAR_NODE_FLAGS,
  ...IMAGE_ENTRYPOINT.slice(-1),
];

export const containerSecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

export const podSecurityContext = {
  runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' },
};

/** Node needs a writable /tmp even with a read-only root filesystem. */
export const tmpVolume = { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } };
export const tmpMount = { name: 'tmp', mountPath: '/tmp' };

export const agentResources = { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '256Mi' } };

function podSpecBase(): Record<string, unknown> {
  return {
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    securityContext: podSecurityContext,
  };
}

/**
 * A one-replica Deployment of a share or access pod: selected by `selector` (the owner's label),
 * its pod labelled with `labels` plus the app name and component (`svc-share`/`share`, …).
 */
export function podDeployment(
  metadata: KubeObject['metadata'],
  selector: Record<string, string>,
  labels: Record<string, string>,
  component: string,
  podSpec: Record<string, unknown>,
): KubeObject {
  const podLabels = {
    ...labels,
    'app.kubernetes.io/name': `svc-${component}`,
    'app.kubernetes.io/component': component,
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      template: { metadata: { labels: podLabels }, spec: { ...podSpecBase(), ...podSpec } },
    },
  };
}
