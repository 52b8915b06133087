import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Kubernetes version the binaries are built for; keep in step with `provide-binaries.sh`. */
export const K8S_VERSION = process.env.SVC_K8S_VERSION ?? 'v1.34.4';

export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
}

const PROVIDE_HINT = 'run `bash test/k8s/provide-binaries.sh` (builds them with Go into the cache once)';

function cacheRoot(): string {
  if (process.env.SVC_TEST_BIN_DIR) return process.env.SVC_TEST_BIN_DIR;
  const xdg = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(xdg, 'svc-test-bin');
}

/** Directory `provide-binaries.sh` writes to (the same rules: `SVC_TEST_BIN_DIR`, else the XDG cache). */
export function binaryDir(): string {
  return join(cacheRoot(), `k8s-${K8S_VERSION}`);
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Locates the real control-plane binaries the Kubernetes integration tests start as processes:
 * Debian's etcd, and kube-apiserver and kube-controller-manager built by
 * `test/k8s/provide-binaries.sh`. Throws one error naming every missing binary and how to get it.
 */
export function locateBinaries(): ControlPlaneBinaries {
  const dir = binaryDir();
  const etcd = ['/usr/bin/etcd', '/usr/local/bin/etcd', join(dir, 'etcd')].find(executable) ?? '';
  const found: ControlPlaneBinaries = {
    etcd,
    kubeApiserver: join(dir, 'kube-apiserver'),
    kubeControllerManager: join(dir, 'kube-controller-manager'),
  };
  const missing: string[] = [];
  if (!etcd) missing.push('etcd (Debian package etcd-server: `apt-get install etcd-server`)');
  for (const [name, path] of [
    ['kube-apiserver', found.kubeApiserver],
    ['kube-controller-manager', found.kubeControllerManager],
  ] as const) {
    if (!executable(path)) missing.push(`${name} (expected at ${path})`);
  }
  if (missing.length > 0) throw missingError(missing);
  return found;
}

/** Gateway API release whose HTTPRoute CRD the tests install; keep in step with `provide-binaries.sh`. */
export const GATEWAY_API_VERSION = process.env.SVC_GATEWAY_API_VERSION ?? 'v1.6.3';

/** Path of the Gateway API's HTTPRoute CRD (standard channel) fetched by `provide-binaries.sh`. */
export function locateHttpRouteCrd(): string {
  const path = join(cacheRoot(), `gateway-api-${GATEWAY_API_VERSION}`, 'gateway.networking.k8s.io_httproutes.yaml');
  try {
    accessSync(path, constants.R_OK);
  } catch {
    throw missingError([`the Gateway API HTTPRoute CRD (expected at ${path})`]);
  }
  return path;
}

/** Path of the helm v3 binary built by `provide-binaries.sh`. */
export function locateHelm(): string {
  const helm = join(binaryDir(), 'helm');
  if (!executable(helm)) throw missingError([`helm (expected at ${helm})`]);
  return helm;
}

function missingError(missing: string[]): Error {
  return new Error(
    `Kubernetes test binaries are missing: ${missing.join('; ')}. To provide them, ${PROVIDE_HINT}; ` +
      'set SVC_TEST_BIN_DIR to use another cache directory.',
  );
}
