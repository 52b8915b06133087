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
