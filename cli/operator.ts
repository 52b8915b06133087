import type { Command } from 'commander';
import type { OperatorFlags } from '../operator/options.ts';

/** `svc operator`: parses the flags and runs the operator process (operator/main.ts `runOperator`). */
export function registerOperatorCommands(program: Command): void {
  program
    .command('operator')
    .description('run the Kubernetes operator (reconciles Share and Access objects into pods, Services and Ingresses)')
    .requiredOption('--namespace-scope <ns|all>', 'namespace to watch, or "all"')
    .requiredOption(
      '--frontend-secret <ns/name>',
      "the installation's frontend Secret (key oauth.yaml: the oauth: section)",
    )
    .requiredOption('--share-domain <domain>', 'share hosts are <token>.<domain>')
    .requiredOption('--image <image>', 'the svc container image share and access pods run')
    .option('--ingress-class <name>', 'ingressClassName of the share Ingresses (default: the cluster default class)')
    .option(
      '--ingress-annotation <key=value>',
      'annotation copied onto every share Ingress, e.g. cert-manager.io/cluster-issuer=letsencrypt (repeatable)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      '--ingress-tls <mode>',
      'TLS of share hosts: none, per-host (Secret svc-share-<name>-tls), default-certificate, external or secret:<name>',
      'none',
    )
    .option(
      '--ingress-await-address',
      'a Share is Ready only once its Ingress has a load-balancer address (for ingress controllers that write one)',
      false,
    )
    .option(
      '--share-http-route <json>',
      'serve share hosts with Gateway API HTTPRoutes instead of Ingresses: JSON {parentRefs: [{name, namespace, sectionName}], annotations, tls: gateway|none}',
    )
    .option(
      '--pod-settings <json>',
      'settings of share, access and environment-agent pods as JSON: imagePullSecrets, imagePullPolicy, resources, nodeSelector, tolerations, affinity, priorityClassName, labels, annotations',
    )
    .option('--leader-elect', 'elect a leader on a coordination.k8s.io Lease (run several replicas)', false)
    .option('--lease-name <name>', 'the leader-election Lease in the frontend Secret namespace', 'svc-operator')
    .option(
      '--unenroll-deadline <minutes>',
      'after an AgentEnrollment is deleted, how long to retry an unreachable controller before dropping its finalizer',
      '10m',
    )
    .option('--metrics-listen <ip:port>', 'listener for /healthz, /readyz and /metrics', '0.0.0.0:8080')
    .option(
      '--auth-secret <ns/name>',
      "the auth endpoint's config Secret to maintain (default <release>-auth-frontend beside the frontend Secret)",
    )
    .option(
      '--auth-share-quota <bytes>',
      "bytes of the auth endpoint's OAuth share list one namespace's Shares may take (32768-16777216)",
      '524288',
    )
    .option(
      '--reserved-host <host>',
      "a host of the installation under the share domain (public frontend, controller API) that no Share's token may take; the auth endpoint's is reserved anyway (repeatable)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--concurrency <n>', 'reconciles running at once per kind', '16')
    .option('--kube-request-timeout <seconds>', 'deadline of one Kubernetes API call', '30')
    .action(async (flags: OperatorFlags) => {
      const { runOperator } = await import('../operator/main.ts');
      await runOperator(flags);
    });
}
