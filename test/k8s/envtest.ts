/**
 * A real Kubernetes control plane for integration tests, started the way controller-runtime's
 * envtest does: Debian's etcd on loopback with a temporary data dir, kube-apiserver with RBAC,
 * client-certificate authentication and service-account keys, and optionally
 * kube-controller-manager (garbage collection of ownerReferences, namespace deletion).
 * No kubelet runs: pods are never scheduled, but every object and controller-side behaviour is real.
 *
 * One control plane per test file (`beforeAll`/`afterAll`); start-up takes a few seconds.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { locateBinaries, type ControlPlaneBinaries } from './binaries.ts';
import { applyCrds } from './crds.ts';
import { createCa, createServiceAccountKey, issueCert, type CertFiles } from './pki.ts';
import { freePort, sleep, startProcess, startWatchdog, type Managed } from './processes.ts';

export interface ControlPlaneOptions {
  /** Also run kube-controller-manager (garbage collector + namespace controllers). */
  controllerManager?: boolean;
  /**
   * CRD manifests (file paths) applied and awaited `Established` before kube-controller-manager
   * starts, so its garbage collector watches those kinds from the start (it only rediscovers
   * resources every 30 s).
   */
  crds?: string[];
  /** Extra kube-apiserver flags (`--flag=value`). */
  apiServerArgs?: string[];
}

export interface UserCredentials {
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
}

export interface ControlPlane {
  /** Kubeconfig of a `system:masters` admin (client certificate). */
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  /** `https://127.0.0.1:<port>` */
  server: string;
  /** Temporary directory holding certificates, data and the processes' logs (`*.log`). */
  dir: string;
  binaries: ControlPlaneBinaries;
  /** Client-certificate credentials for another user (RBAC applies; no groups unless given). */
  userKubeConfig(user: string, groups?: string[]): Promise<UserCredentials>;
  /** Stops kube-apiserver (SIGTERM) and starts it again on the same port and etcd; resolves when ready. */
  restartApiServer(): Promise<void>;
  /** Stops every process and removes the temporary directory. Idempotent. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 90_000;

interface Pki {
  ca: CertFiles;
  serving: CertFiles;
  admin: CertFiles;
  saKey: string;
}

async function createPki(dir: string): Promise<Pki> {
  const ca = await createCa(dir);
  const [serving, admin, saKey] = await Promise.all([
    issueCert(dir, ca, {
      name: 'apiserver',
      commonName: 'kube-apiserver',
      altNames: ['IP:127.0.0.1', 'DNS:localhost', 'IP:10.0.0.1', 'DNS:kubernetes.default.svc'],
      usage: 'server',
    }),
    issueCert(dir, ca, { name: 'admin', commonName: 'admin', organizations: ['system:masters'], usage: 'client' }),
    createServiceAccountKey(dir),
  ]);
  return { ca, serving, admin, saKey };
}

/** A kubeconfig (YAML) for `user` authenticating with the client certificate `client`. */
export async function kubeconfigYaml(server: string, ca: CertFiles, user: string, client: CertFiles): Promise<string> {
  const b64 = async (path: string): Promise<string> => (await readFile(path)).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: envtest',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${await b64(ca.cert)}`,
    'users:',
    `- name: ${JSON.stringify(user)}`,
    '  user:',
    `    client-certificate-data: ${await b64(client.cert)}`,
    `    client-key-data: ${await b64(client.key)}`,
    'contexts:',
    '- name: envtest',
    '  context:',
    '    cluster: envtest',
    `    user: ${JSON.stringify(user)}`,
    '    namespace: default',
    'current-context: envtest',
    '',
  ].join('\n');
}

export function loadKubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** GET over TLS with the admin client certificate; resolves with the status code (0 when unreachable). */
async function httpsStatus(url: string, pki: Pki): Promise<number> {
  const [ca, cert, key] = await Promise.all([readFile(pki.ca.cert), readFile(pki.admin.cert), readFile(pki.admin.key)]);
  return await new Promise<number>((resolve) => {
    const req = request(url, { ca, cert, key, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Polls `check` until it holds; fails early (with the log tail) when `proc` exits. */
async function waitUntil(proc: Managed, what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exited: string | undefined;
  void proc.exited.then((status) => (exited = status));
  while (Date.now() < deadline) {
    if (exited !== undefined) {
      throw new Error(`${proc.name} exited (${exited}) before ${what}:\n${proc.tail()}`);
    }
    if (await check()) return;
    await sleep(250);
  }
  throw new Error(`timed out after ${READY_TIMEOUT_MS} ms waiting for ${what}:\n${proc.tail()}`);
}

const isPortCollision = (proc: Managed): boolean => /address already in use/i.test(proc.tail(80));

/**
 * Starts etcd and kube-apiserver (and kube-controller-manager when asked), writes an admin
 * kubeconfig, and resolves once `/readyz` is ok and the `default` namespace exists.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = locateBinaries();
  const dir = await mkdtemp(join(tmpdir(), 'svc-envtest-'));
  const pidFile = join(dir, 'pids');
  const stopWatchdog = startWatchdog(pidFile, dir);
  const procs: Managed[] = [];
  let apiServer: Managed | undefined;
  let stopped = false;

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    // Reverse start order: controller-manager, apiserver, then etcd.
    for (const proc of [...procs].reverse()) await proc.terminate();
    stopWatchdog();
    if (process.env.SVC_ENVTEST_KEEP) {
      console.warn(`svc envtest: kept ${dir} (SVC_ENVTEST_KEEP)`);
      return;
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const pki = await createPki(dir);

    // etcd — retried on a port collision (ports are picked before the process can bind them).
    let etcdUrl = '';
    for (let attempt = 1; ; attempt++) {
      const [clientPort, peerPort] = [await freePort(), await freePort()];
      etcdUrl = `http://127.0.0.1:${clientPort}`;
      const peerUrl = `http://127.0.0.1:${peerPort}`;
      const etcd = startProcess({
        name: 'etcd',
        command: binaries.etcd,
        args: [
          `--data-dir=${join(dir, 'etcd')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=default=${peerUrl}`,
          '--name=default',
          '--log-level=warn',
        ],
        logFile: join(dir, 'etcd.log'),
        pidFile,
      });
      procs.push(etcd);
      try {
        await waitUntil(etcd, 'etcd /health', () => httpOk(`${etcdUrl}/health`));
        break;
      } catch (err) {
        procs.pop();
        await etcd.terminate();
        if (attempt < 3 && isPortCollision(etcd)) continue;
        throw err;
      }
    }

    // kube-apiserver
    let securePort = await freePort();
    let server = `https://127.0.0.1:${securePort}`;
    const apiServerArgs = (): string[] => [
      '--advertise-address=127.0.0.1',
      '--bind-address=127.0.0.1',
      `--secure-port=${securePort}`,
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${pki.serving.cert}`,
      `--tls-private-key-file=${pki.serving.key}`,
      `--client-ca-file=${pki.ca.cert}`,
      '--authorization-mode=RBAC',
      `--service-account-key-file=${pki.saKey}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      '--service-cluster-ip-range=10.0.0.0/16',
      '--disable-admission-plugins=ServiceAccount',
      '--allow-privileged=true',
      '--v=0',
      ...(options.apiServerArgs ?? []),
    ];
    /**
     * A port taken between `freePort` and the bind (another process's outgoing connection can be
     * given it as its local port) is replaced by a new one at the first start; a restart keeps its
     * port (clients hold its address) and waits for it instead.
     */
    const startApiServer = async (firstStart: boolean): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        const proc = startProcess({
          name: 'kube-apiserver',
          command: binaries.kubeApiserver,
          args: apiServerArgs(),
          logFile: join(dir, 'kube-apiserver.log'),
          pidFile,
        });
        try {
          await waitUntil(
            proc,
            'kube-apiserver /readyz',
            async () => (await httpsStatus(`${server}/readyz`, pki)) === 200,
          );
          await waitUntil(
            proc,
            'the default namespace',
            async () => (await httpsStatus(`${server}/api/v1/namespaces/default`, pki)) === 200,
          );
          apiServer = proc;
          procs.splice(1, 0, proc); // keep start order: etcd, apiserver, controller-manager
          return;
        } catch (err) {
          await proc.terminate();
          if (attempt < 3 && isPortCollision(proc)) {
            if (firstStart) {
              securePort = await freePort();
              server = `https://127.0.0.1:${securePort}`;
            } else await sleep(1_000);
            continue;
          }
          throw err;
        }
      }
    };
    await startApiServer(true);

    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    await writeFile(kubeconfigPath, await kubeconfigYaml(server, pki.ca, 'admin', pki.admin), { mode: 0o600 });
    const kubeConfig = loadKubeConfig(kubeconfigPath);

    if (options.crds && options.crds.length > 0) await applyCrds(kubeConfig, options.crds);

    if (options.controllerManager) {
      const cm = startProcess({
        name: 'kube-controller-manager',
        command: binaries.kubeControllerManager,
        args: [
          `--kubeconfig=${kubeconfigPath}`,
          '--controllers=garbagecollector,namespace',
          '--leader-elect=false',
          '--secure-port=0',
          '--concurrent-gc-syncs=5',
          '--v=0',
        ],
        logFile: join(dir, 'kube-controller-manager.log'),
        pidFile,
      });
      procs.push(cm);
      // Ready once the garbage collector watches every resource (no health port: --secure-port=0).
      await waitUntil(cm, 'the garbage collector to sync', () =>
        Promise.resolve(/all resource monitors have synced/.test(cm.tail(400))),
      );
    }

    const userKubeConfig = async (user: string, groups: string[] = []): Promise<UserCredentials> => {
      const safe = user.replace(/[^a-zA-Z0-9.-]/g, '_');
      const cert = await issueCert(dir, pki.ca, {
        name: `user-${safe}`,
        commonName: user,
        organizations: groups,
        usage: 'client',
      });
      const path = join(dir, `user-${safe}.kubeconfig`);
      await writeFile(path, await kubeconfigYaml(server, pki.ca, user, cert), { mode: 0o600 });
      return { kubeconfigPath: path, kubeConfig: loadKubeConfig(path) };
    };

    const restartApiServer = async (): Promise<void> => {
      if (stopped) throw new Error('control plane is stopped');
      if (apiServer) {
        const old = apiServer;
        procs.splice(procs.indexOf(old), 1);
        await old.terminate();
      }
      await startApiServer(false);
    };

    return { kubeconfigPath, kubeConfig, server, dir, binaries, userKubeConfig, restartApiServer, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
