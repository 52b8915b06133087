import { join } from 'node:path';
import { svcCli, writeYaml } from '../controller/harness.ts';

/**
 * Writes the config of a one-process installation for the network-namespace tunnel tests: the
 * public frontend on this machine's loopback, the controller (and so the tunnel endpoint) on the
 * lab's bridge address, with a fresh controller identity in `dataDir`. Returns the config's path.
 */
export async function writeInstallationConfig(dataDir: string, path: string, hostAddress: string): Promise<string> {
  const zId = (await svcCli(['admin', 'create', 'identity', 'ctl', '--data-dir', dataDir])).stdout.trim();
  return writeYaml(path, [
    'frontend:',
    '  listen: 127.0.0.1:0',
    '  domain: svc.localhost',
    'controller:',
    `  listen: ${hostAddress}:0`,
    'agent_controller:',
    `  z_id: ${zId}`,
    `  identity_path: ${join(dataDir, 'identities', 'ctl.json')}`,
  ]);
}
