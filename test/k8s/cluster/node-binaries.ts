import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { binaryDir, locateBinaries, type ControlPlaneBinaries } from '../binaries.ts';

/** Every program the one-node test cluster runs, by absolute path. */
export interface NodeBinaries extends ControlPlaneBinaries {
  kubelet: string;
  kubeScheduler: string;
  kubeProxy: string;
  coredns: string;
  /** The Kubernetes pause program (pod sandbox image, and the node's PID 1). */
  pause: string;
  containerd: string;
  ctr: string;
  /** Directory of the CNI plugins (bridge, host-local, portmap, loopback). */
  cniBinDir: string;
}

const PROVIDE_HINT =
  'run `bash scripts/test-prereqs.sh` (installs Debian containerd, runc, containernetworking-plugins, ' +
  'iptables, conntrack, buildah, mmdebstrap, and builds the node components with ' +
  '`bash test/k8s/provide-node-binaries.sh`)';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Locates the node components (built by `provide-node-binaries.sh` into the cache directory) and
 * Debian's container runtime. Throws one error naming everything missing and how to get it.
 */
export function locateNodeBinaries(): NodeBinaries {
  const dir = binaryDir();
  const built = {
    kubelet: join(dir, 'kubelet'),
    kubeScheduler: join(dir, 'kube-scheduler'),
    kubeProxy: join(dir, 'kube-proxy'),
    coredns: join(dir, 'coredns'),
    pause: join(dir, 'pause'),
  };
  const system = {
    containerd: '/usr/bin/containerd',
    ctr: '/usr/bin/ctr',
    cniBinDir: '/usr/lib/cni',
  };
  const required = [
    ...Object.values(built),
    system.containerd,
    system.ctr,
    '/usr/bin/containerd-shim-runc-v2',
    '/usr/sbin/runc',
    join(system.cniBinDir, 'bridge'),
    join(system.cniBinDir, 'host-local'),
    join(system.cniBinDir, 'portmap'),
    join(system.cniBinDir, 'loopback'),
    '/usr/sbin/iptables',
    '/usr/sbin/conntrack',
    '/usr/bin/buildah',
    '/usr/bin/mmdebstrap',
    '/usr/bin/nsenter',
    '/usr/bin/unshare',
  ];
  const missing = required.filter((path) => !executable(path));
  if (missing.length > 0) {
    throw new Error(`test cluster programs are missing: ${missing.join(', ')}. To provide them, ${PROVIDE_HINT}.`);
  }
  return { ...locateBinaries(), ...built, ...system };
}
