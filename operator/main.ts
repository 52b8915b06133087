import { KubeConfig } from '@kubernetes/client-node';
import { untilSignal } from '../lib/signals.ts';
import { startOperator } from './operator.ts';
import { parseOperatorFlags, type OperatorFlags } from './options.ts';

/**
 * `svc operator`: validates the flags (every problem at once), loads the KubeConfig (in-cluster
 * service account or KUBECONFIG), starts the operator and runs until SIGTERM/SIGINT. An operator
 * that lost its leader lease steps down and exits with its code, to restart as a standby.
 */
export async function runOperator(flags: OperatorFlags): Promise<void> {
  const stopped = untilSignal();
  const options = parseOperatorFlags(flags);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const operator = await startOperator({ ...options, kubeConfig });
  const code = await Promise.race([stopped.then(() => undefined), operator.exited]);
  if (code !== undefined) process.exit(code);
  await operator.close();
}
