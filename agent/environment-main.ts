import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../lib/kube/client.ts';
import { createLogger } from '../lib/logger.ts';
import { RemotingClient } from './remoting/client.ts';
import { kubeExecutor } from './remoting/kube-executor.ts';
import { startHealthServer } from '../lib/health.ts';
import { listenAddressProblem, parseListenAddress } from '../lib/listen.ts';
import { isEnrollmentFile, type EnrollmentFile } from '../lib/remoting/files.ts';
import { SvcError, badInput, errorText } from '../lib/errors.ts';
import { untilSignal } from '../lib/signals.ts';

/** The flags of `svc agent environment`. */
export interface EnvironmentAgentOptions {
  readonly namespace: string;
  readonly enrollmentFile: string;
  readonly healthListen?: string;
}

/**
 * `svc agent environment --namespace N --enrollment-file F`: the environment agent of a Kubernetes
 * namespace enrolled by an AgentEnrollment (docs/controller.md, "Kubernetes"): holds the remoting
 * connection to the controller and runs its commands as Share/Access objects in N, until
 * SIGINT/SIGTERM. The CLI loads this file only for this command.
 */
export async function runEnvironmentAgent(opts: EnvironmentAgentOptions): Promise<void> {
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
