import { problem, type Problem, type Result } from '../lib/errors.ts';
import { SHARE_TOKEN } from '../lib/share/spec.ts';
import { agentResources, containerSecurityContext, podDeployment, tmpMount, tmpVolume } from './pod.ts';
import {
  ACCESSES,
  ACCESS_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  ownerReference,
  type Access,
  type KubeObject,
  type Share,
} from '../lib/kube/resources.ts';
import { childName as shareChildName } from './share-children.ts';
import { applyPodSettings, type PodSettings } from './pod-settings.ts';

export const DEFAULT_BIND_PORT = 8080;
const MAX_NAME = 63 - 'svc-access-'.length;
const DNS1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

export function accessChildName(accessName: string): string {
  return `svc-access-${accessName}`;
}

export interface ValidAccess {
  readonly name: string;
  readonly namespace: string;
  readonly shareToken: string;
  readonly bindPort: number;
}

/** What the CRD schema cannot check: the child names must be DNS labels. */
export function validateAccess(access: Access): Result<ValidAccess> {
  const problems: Problem[] = [];
  const { name, namespace = '' } = access.metadata;
  if (name.length > MAX_NAME || !DNS1035.test(accessChildName(name))) {
    problems.push(
      problem(
        'metadata.name',
        `must be a DNS label of at most ${MAX_NAME} characters (it names the Service ${accessChildName(name)})`,
      ),
    );
  }
  const shareToken = access.spec?.shareToken ?? '';
  if (!SHARE_TOKEN.test(shareToken)) problems.push(problem('spec.shareToken', 'must be a share token (a DNS label)'));
  const bindPort = access.spec?.bindPort ?? DEFAULT_BIND_PORT;
  if (!Number.isInteger(bindPort) || bindPort < 1 || bindPort > 65535)
    problems.push(problem('spec.bindPort', 'must be a port number 1-65535', 'not_allowed'));
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: { name, namespace, shareToken, bindPort } };
}

/** The private share an Access reaches: the Share in the same namespace whose token is `shareToken`. */
export function findShare(shares: readonly Share[], namespace: string, token: string): Share | undefined {
  return shares.find((s) => s.metadata.namespace === namespace && (s.status?.token ?? s.spec?.token) === token);
}

/** In-cluster URL of an Access: what `status.endpoint` reports. */
export function accessEndpoint(access: ValidAccess): string {
  return `http://${accessChildName(access.name)}.${access.namespace}.svc:${access.bindPort}`;
}

/**
 * Access → Deployment of a private access frontend (`svc agent backend --backend-mode proxy`
 * forwarding to the share's Service, identity-header look-alikes stripped) and its Service.
 */
export function desiredAccessChildren(
  owner: Access,
  access: ValidAccess,
  share: Share,
  image: string,
  pods?: PodSettings,
): { deployment: KubeObject; service: KubeObject } {
  const name = accessChildName(access.name);
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY, [ACCESS_LABEL]: access.name };
  const metadata = { name, namespace: access.namespace, labels, ownerReferences: [ownerReference(ACCESSES, owner)] };
  const target = `http://${shareChildName(share.metadata.name)}.${access.namespace}.svc:80`;
  const deployment = podDeployment(metadata, { [ACCESS_LABEL]: access.name }, labels, 'access', {
    containers: [
      {
        name: 'agent',
        image,
        args: [
          'agent',
          'backend',
          '--backend-mode',
          'proxy',
          '--target',
          target,
          '--listen',
          `0.0.0.0:${access.bindPort}`,
          '--identity-headers',
          'strip',
        ],
        ports: [{ name: 'http', containerPort: access.bindPort, protocol: 'TCP' }],
        readinessProbe: { tcpSocket: { port: access.bindPort }, periodSeconds: 10 },
        securityContext: containerSecurityContext,
        resources: agentResources,
        volumeMounts: [tmpMount],
      },
    ],
    volumes: [tmpVolume],
  });
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'ClusterIP',
      selector: { [ACCESS_LABEL]: access.name },
      ports: [{ name: 'http', port: access.bindPort, targetPort: access.bindPort, protocol: 'TCP' }],
    },
  };
  return { deployment: applyPodSettings(deployment, pods), service };
}
