import { readFileSync } from 'node:fs';
import { startHealthServer } from '../lib/health.ts';
import { listenAddressProblem, parseListenAddress } from '../lib/listen.ts';
import type { Command } from 'commander';
import { isEnrollmentFile, type EnrollmentFile } from '../lib/remoting/files.ts';
import { SvcError, badInput, errorText } from '../lib/errors.ts';
import { untilSignal } from '../lib/signals.ts';
import { subcommand } from './local.ts';

interface EnvironmentAgentOptions {
  namespace: string;
  enrollmentFile: string;
  healthListen?: string;
}

/**
 * `svc agent environment --namespace N --enrollment-file F`: the environment agent of a Kubernetes
 * namespace enrolled by an AgentEnrollment (docs/controller.md, "Kubernetes"). The operator runs it
 * in a Deployment with the enrollment Secret mounted as F and a ServiceAccount that may only manage
 * Shares and Accesses in N.
 */
export function registerEnvironmentAgentCommands(program: Command): void {
  const agent = subcommand(program, 'agent', 'agent operations');
  agent
    .command('environment')
    .description("hold an enrolled namespace's remoting connection and run remote commands as Share/Access objects")
    .requiredOption('--namespace <ns>', 'the namespace (environment) whose Shares and Accesses the agent manages')
    .requiredOption(
      '--enrollment-file <path>',
      'agent-enrollment.json written by the operator (the mounted enrollment Secret)',
    )
    .option('--health-listen <ip:port>', 'serve /healthz (alive) and /readyz (connected to the controller) here')
    .action(async (opts: EnvironmentAgentOptions) => {
      await runEnvironmentAgent(opts);
    });
}

async function runEnvironmentAgent(opts: EnvironmentAgentOptions): Promise<void> {
  const [{ KubeConfig }, { KubeClient }, { RemotingClient }, { kubeExecutor }, { createLogger }] = await Promise.all([
    import('@kubernetes/client-node'),
    import('../lib/kube/client.ts'),
    import('../agent/remoting/client.ts'),
    import('../agent/remoting/kube-executor.ts'),
    import('../lib/logger.ts'),
  ]);
  const healthAddress = opts.healthListen === undefined ? undefined : parseListenAddress(opts.healthListen);
  if (opts.healthListen !== undefined && !healthAddress)
    throw badInput(`--health-listen: ${listenAddressProblem(opts.healthListen)}`);
  const enrollment = readEnrollmentFile(opts.enrollmentFile);
  const stopped = untilSignal();
  const logger = createLogger('svc-environment-agent');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const client = await KubeClient.create(kc);
  const remoting = new RemotingClient({
    enrollment,
    executor: kubeExecutor({ client, namespace: opts.namespace, logger }),
    logger,
  });
  logger.info({ namespace: opts.namespace, envZId: enrollment.envZId }, 'environment agent starting');
  remoting.start();
  // `/readyz`: the remoting connection is up (the kubelet's readiness probe).
  const health = healthAddress
    ? await startHealthServer(healthAddress, {
        ready: () =>
          remoting.connected ? { ok: true, detail: 'ok' } : { ok: false, detail: 'not connected to the controller' },
      })
    : undefined;
  if (health) logger.info({ healthPort: health.port }, 'health endpoints listening');
  await stopped;
  await health?.close();
  await remoting.close();
  client.close();
}

/**
 * Reads the enrollment the operator wrote. Unlike `agent-enrollment.json` in a data directory, the
 * file's mode is not checked: a Secret volume's mode is set by the kubelet (group-readable with
 * fsGroup), and the pod holds no other user.
 */
function readEnrollmentFile(path: string): EnrollmentFile {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new SvcError('enrollment_unreadable', `--enrollment-file: cannot read ${path}: ${errorText(err)}`);
  }
  if (!isEnrollmentFile(doc)) throw badInput(`--enrollment-file: ${path} is not an agent enrollment (version 1)`);
  return doc;
}
