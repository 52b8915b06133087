/**
 * A real one-node Kubernetes cluster for the slow end-to-end tests: etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, containerd with runc and the CNI bridge, kubelet,
 * kube-proxy (iptables mode) and CoreDNS, each the real program, run as processes inside the node
 * namespaces of `node-namespace.ts`. Pods really run: images are imported into containerd, probes
 * are executed by the kubelet, Services are implemented by kube-proxy, names resolved by CoreDNS.
 *
 * Everything lives in one temporary directory; `stop()` kills the node's PID 1 (the kernel then
 * ends every process in it), removes the cgroups the kubelet created and the directory. A detached
 * watchdog does the same if the test process dies first.
 */
import { readFile, rm, writeFile, mkdir, readdir, rmdir, copyFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { request } from 'node:https';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { kubeconfigYaml, loadKubeConfig } from '../envtest.ts';
import { createCa, createServiceAccountKey, issueCert, type CertFiles } from '../pki.ts';
import { sleep, startWatchdog, type Managed } from '../processes.ts';
import { rawRequest, serverSideApply } from '../raw.ts';
import { locateNodeBinaries, type NodeBinaries } from './node-binaries.ts';
import { createNodeNamespace, type NodeNamespace } from './node-namespace.ts';

export const NODE_NAME = 'svc-node';
export const SERVICE_CIDR = '10.96.0.0/16';
export const POD_CIDR = '10.244.0.0/24';
export const DNS_SERVICE_IP = '10.96.0.10';
const API_PORT = 6443;
const READY_TIMEOUT_MS = 120_000;

export interface Cluster {
  /** Admin (`system:masters`) kubeconfig file and client. */
  kubeconfigPath: string;
  kubeConfig: KubeConfig;
  /** `https://<nodeIp>:6443` */
  server: string;
  node: NodeNamespace;
  dir: string;
  binaries: NodeBinaries;
  /** Imports docker-archive files into containerd's `k8s.io` namespace (where the kubelet looks). */
  importImages(archives: string[]): Promise<void>;
  /** Images containerd holds in `k8s.io`, with their sizes (`ctr images ls`). */
  images(): Promise<string>;
  /**
   * What service accounts asked of the API server (its audit log, level Metadata): which calls the
   * pods' real RBAC identities made, and how the API server answered.
   */
  auditEvents(): Promise<AuditEvent[]>;
  /** The last lines of a component's log (`kubelet`, `containerd`, ...). */
  logTail(component: string, lines?: number): string;
  stop(): Promise<void>;
}

/** One entry of the API server's audit log (audit.k8s.io/v1 Event, the fields the tests read). */
export interface AuditEvent {
  verb: string;
  user: { username: string; extra?: Record<string, string[]> };
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
}

/** Service accounts' calls at level Metadata (who, verb, object, answer; no bodies); nothing else. */
const AUDIT_POLICY = {
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [{ level: 'Metadata', userGroups: ['system:serviceaccounts'] }, { level: 'None' }],
};

interface Certs {
  ca: CertFiles;
  saKey: string;
  apiserver: CertFiles;
  apiserverKubeletClient: CertFiles;
  kubeletServing: CertFiles;
}

async function issueCerts(dir: string, nodeIp: string): Promise<Certs> {
  const ca = await createCa(dir);
  const saKey = await createServiceAccountKey(dir);
  const apiserver = await issueCert(dir, ca, {
    name: 'apiserver',
    commonName: 'kube-apiserver',
    altNames: [
      `IP:${nodeIp}`,
      'IP:127.0.0.1',
      'IP:10.96.0.1',
      'DNS:kubernetes',
      'DNS:kubernetes.default',
      'DNS:kubernetes.default.svc',
      'DNS:kubernetes.default.svc.cluster.local',
    ],
    usage: 'server',
  });
  const apiserverKubeletClient = await issueCert(dir, ca, {
    name: 'apiserver-kubelet-client',
    commonName: 'kube-apiserver-kubelet-client',
    organizations: ['system:masters'],
    usage: 'client',
  });
  const kubeletServing = await issueCert(dir, ca, {
    name: 'kubelet-serving',
    commonName: `system:node:${NODE_NAME}`,
    altNames: [`IP:${nodeIp}`, `DNS:${NODE_NAME}`],
    usage: 'server',
  });
  return { ca, saKey, apiserver, apiserverKubeletClient, kubeletServing };
}

/** Writes a kubeconfig for a client-certificate identity; returns its path. */
async function identity(dir: string, server: string, ca: CertFiles, user: string, groups: string[] = []) {
  const safe = user.replace(/[^a-zA-Z0-9.-]/g, '_');
  const cert = await issueCert(dir, ca, {
    name: `user-${safe}`,
    commonName: user,
    organizations: groups,
    usage: 'client',
  });
  const path = join(dir, `${safe}.kubeconfig`);
  await writeFile(path, await kubeconfigYaml(server, ca, user, cert), { mode: 0o600 });
  return path;
}

async function httpsOk(url: string, kc: KubeConfig): Promise<boolean> {
  const options = {};
  await kc.applyToHTTPSOptions(options);
  return await new Promise<boolean>((resolve) => {
    const req = request(url, { ...options, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
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

/** Polls `check` until it holds; fails early, with the logs' tails, when a watched process exits. */
async function waitFor(what: string, watched: Managed[], check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const exited = new Map<Managed, string>();
  for (const p of watched) void p.exited.then((status) => exited.set(p, status));
  while (Date.now() < deadline) {
    for (const [p, status] of exited) {
      throw new Error(`${p.name} exited (${status}) before ${what}:\n${p.tail(40)}`);
    }
    if (await check().catch(() => false)) return;
    await sleep(500);
  }
  throw new Error(`timed out waiting for ${what}:\n${watched.map((p) => `--- ${p.name}\n${p.tail(20)}`).join('\n')}`);
}

/** cgroup hierarchies mounted on this host (`/sys/fs/cgroup/<name>`, v1 and the unified v2 one). */
async function cgroupHierarchies(): Promise<string[]> {
  const mounts = await readFile('/proc/self/mounts', 'utf8');
  return mounts
    .split('\n')
    .map((l) => l.split(' '))
    .filter(
      (f) =>
        (f[2] === 'cgroup' || f[2] === 'cgroup2') && (f[1] === '/sys/fs/cgroup' || f[1]?.startsWith('/sys/fs/cgroup/')),
    )
    .map((f) => f[1]!);
}

/** Removes a cgroup tree bottom-up (a cgroup directory can only be removed once it is empty). */
async function removeCgroup(path: string): Promise<void> {
  if (!existsSync(path)) return;
  const entries = await readdir(path, { withFileTypes: true });
  for (const e of entries) if (e.isDirectory()) await removeCgroup(join(path, e.name));
  for (let i = 0; i < 50; i++) {
    try {
      await rmdir(path);
      return;
    } catch {
      await sleep(100);
    }
  }
}

function containerdConfig(dir: string, binaries: NodeBinaries): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return [
    'version = 2',
    `root = "${join(dir, 'containerd', 'root')}"`,
    `state = "${join(dir, 'containerd', 'state')}"`,
    'disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]',
    '[grpc]',
    `  address = "${join(dir, 'containerd.sock')}"`,
    `[${cri}]`,
    '  sandbox_image = "registry.k8s.io/pause:3.10.1"',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    // This host's capability bounding set lacks CAP_SYS_RESOURCE, so no process may lower its
    // oom_score_adj; the sandbox's -998 would make runc's init fail. Clamp to containerd's own.
    '  restrict_oom_score_adj = true',
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.containerd.runtimes.runc.options]`,
    '  SystemdCgroup = false',
    `[${cri}.cni]`,
    `  bin_dir = "${binaries.cniBinDir}"`,
    `  conf_dir = "${join(dir, 'cni', 'net.d')}"`,
    '[plugins."io.containerd.internal.v1.opt"]',
    `  path = "${join(dir, 'containerd', 'opt')}"`,
    '',
  ].join('\n');
}

function cniConfig(dir: string): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: 'svc-pods',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        ipMasq: true,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: POD_CIDR }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: join(dir, 'cni', 'ipam'),
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  });
}

/** Starts the cluster; resolves once the node is Ready and DNS answers. */
export async function startKubeCluster(): Promise<Cluster> {
  const binaries = locateNodeBinaries();
  const dir = await mkdtemp(join(tmpdir(), 'svc-cluster-'));
  const pidFile = join(dir, 'pids');
  const cgroupName = `svc-cluster-${randomBytes(4).toString('hex')}`;
  const hierarchies = await cgroupHierarchies();
  const cgroupDirs = hierarchies.map((h) => join(h, cgroupName));
  const stopWatchdog = startWatchdog(
    pidFile,
    dir,
    `sleep 2; for c in ${cgroupDirs.join(' ')}; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done`,
  );
  const procs = new Map<string, Managed>();
  let node: NodeNamespace | undefined;
  let stopped = false;

  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await node?.destroy();
    for (const c of cgroupDirs) await removeCgroup(c);
    stopWatchdog();
    if (process.env.SVC_ENVTEST_KEEP) {
      console.warn(`svc cluster: kept ${dir} (SVC_ENVTEST_KEEP)`);
      return;
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    // kubelet requires its cgroup root to exist; cpuset children need cpus and mems set.
    for (const c of cgroupDirs) {
      await mkdir(c, { recursive: true });
      if (c.includes('/cpuset/')) {
        for (const f of ['cpuset.cpus', 'cpuset.mems']) await copyFile(join(c, '..', f), join(c, f));
      }
    }
    node = await createNodeNamespace(dir, pidFile, binaries.pause);
    const ns = node;
    const server = `https://${ns.nodeIp}:${API_PORT}`;
    const certs = await issueCerts(dir, ns.nodeIp);
    const user = (name: string, groups: string[] = []): Promise<string> =>
      identity(dir, server, certs.ca, name, groups);
    const admin = await user('admin', ['system:masters']);
    const kubeletKc = await user(`system:node:${NODE_NAME}`, ['system:nodes']);
    const kcmKc = await user('system:kube-controller-manager');
    const schedulerKc = await user('system:kube-scheduler');
    const proxyKc = await user('system:kube-proxy');
    const corednsKc = await user('svc:coredns');
    const kubeConfig = loadKubeConfig(admin);
    const start = (name: string, command: string, args: string[]): Managed => {
      const proc = ns.start({ name, command, args, logFile: join(dir, `${name}.log`), pidFile });
      procs.set(name, proc);
      return proc;
    };

    const etcd = start('etcd', binaries.etcd, [
      `--data-dir=${join(dir, 'etcd')}`,
      '--listen-client-urls=http://127.0.0.1:2379',
      '--advertise-client-urls=http://127.0.0.1:2379',
      '--listen-peer-urls=http://127.0.0.1:2380',
      '--initial-advertise-peer-urls=http://127.0.0.1:2380',
      '--initial-cluster=default=http://127.0.0.1:2380',
      '--name=default',
      '--log-level=warn',
    ]);
    const auditLog = join(dir, 'audit.log');
    await writeFile(join(dir, 'audit-policy.yaml'), toYaml(AUDIT_POLICY));
    const apiserver = start('kube-apiserver', binaries.kubeApiserver, [
      `--advertise-address=${ns.nodeIp}`,
      '--bind-address=0.0.0.0',
      `--secure-port=${API_PORT}`,
      '--etcd-servers=http://127.0.0.1:2379',
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
      `--tls-cert-file=${certs.apiserver.cert}`,
      `--tls-private-key-file=${certs.apiserver.key}`,
      `--client-ca-file=${certs.ca.cert}`,
      `--kubelet-client-certificate=${certs.apiserverKubeletClient.cert}`,
      `--kubelet-client-key=${certs.apiserverKubeletClient.key}`,
      `--kubelet-certificate-authority=${certs.ca.cert}`,
      '--kubelet-preferred-address-types=InternalIP',
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-key-file=${certs.saKey}`,
      `--service-account-signing-key-file=${certs.saKey}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      '--allow-privileged=true',
      `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
      `--audit-log-path=${auditLog}`,
      '--v=0',
    ]);
    await waitFor('kube-apiserver /readyz', [etcd, apiserver], () => httpsOk(`${server}/readyz`, kubeConfig));

    const kcm = start('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${kcmKc}`,
      `--authentication-kubeconfig=${kcmKc}`,
      `--authorization-kubeconfig=${kcmKc}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${certs.saKey}`,
      `--root-ca-file=${certs.ca.cert}`,
      `--cluster-signing-cert-file=${certs.ca.cert}`,
      `--cluster-signing-key-file=${certs.ca.key}`,
      '--v=0',
    ]);
    const scheduler = start('kube-scheduler', binaries.kubeScheduler, [
      `--kubeconfig=${schedulerKc}`,
      `--authentication-kubeconfig=${schedulerKc}`,
      `--authorization-kubeconfig=${schedulerKc}`,
      '--bind-address=127.0.0.1',
      '--leader-elect=false',
      '--v=0',
    ]);

    // containerd, with the CNI bridge configuration.
    await mkdir(join(dir, 'cni', 'net.d'), { recursive: true });
    await writeFile(join(dir, 'cni', 'net.d', '10-svc.conflist'), cniConfig(dir));
    await writeFile(join(dir, 'containerd.toml'), containerdConfig(dir, binaries));
    const sock = join(dir, 'containerd.sock');
    const containerd = start('containerd', binaries.containerd, ['--config', join(dir, 'containerd.toml')]);
    const ctr = (...args: string[]): Promise<string> => ns.run(binaries.ctr, ['--address', sock, ...args]);
    await waitFor('containerd', [containerd], async () => {
      await ctr('version');
      return true;
    });

    // kubelet
    await writeFile(join(dir, 'resolv.conf'), `nameserver ${DNS_SERVICE_IP}\n`);
    const kubeletConfig = {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupRoot: `/${cgroupName}`,
      containerRuntimeEndpoint: `unix://${sock}`,
      address: ns.nodeIp,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: certs.ca.cert },
      },
      authorization: { mode: 'Webhook' },
      tlsCertFile: certs.kubeletServing.cert,
      tlsPrivateKeyFile: certs.kubeletServing.key,
      clusterDNS: [DNS_SERVICE_IP],
      clusterDomain: 'cluster.local',
      resolvConf: join(dir, 'resolv.conf'),
      imageGCHighThresholdPercent: 100,
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      failSwapOn: false,
      serializeImagePulls: false,
      staticPodPath: '',
      syncFrequency: '10s',
      fileCheckFrequency: '10s',
      nodeStatusUpdateFrequency: '5s',
      podLogsDir: join(dir, 'pod-logs'),
    };
    await writeFile(join(dir, 'kubelet.yaml'), toYaml(kubeletConfig));
    const kubelet = start('kubelet', binaries.kubelet, [
      `--config=${join(dir, 'kubelet.yaml')}`,
      `--kubeconfig=${kubeletKc}`,
      `--root-dir=${join(dir, 'kubelet')}`,
      `--cert-dir=${join(dir, 'kubelet-pki')}`,
      `--node-ip=${ns.nodeIp}`,
      `--hostname-override=${NODE_NAME}`,
      '--v=1',
    ]);

    // kube-proxy (iptables mode, inside the node's network namespace only).
    const proxyConfig = {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: proxyKc },
      mode: 'iptables',
      clusterCIDR: POD_CIDR,
      hostnameOverride: NODE_NAME,
      bindAddress: ns.nodeIp,
      healthzBindAddress: `${ns.nodeIp}:10256`,
      metricsBindAddress: '127.0.0.1:10249',
      // Leave the host-wide nf_conntrack_max alone (only per-namespace timeouts are set).
      conntrack: { maxPerCore: 0, min: 0 },
    };
    await writeFile(join(dir, 'kube-proxy.yaml'), toYaml(proxyConfig));
    const proxy = start('kube-proxy', binaries.kubeProxy, [`--config=${join(dir, 'kube-proxy.yaml')}`, '--v=0']);

    await waitFor('the node to be Ready', [kubelet, containerd, kcm, scheduler], async () => {
      const n = (await rawRequest(kubeConfig, `/api/v1/nodes/${NODE_NAME}`)) as {
        status?: { conditions?: { type: string; status: string }[] };
      };
      return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    });
    await waitFor('kube-proxy /healthz', [proxy], () => httpOk(`http://${ns.nodeIp}:10256/healthz`));

    // CoreDNS: a process on the node, behind the kube-dns Service (kube-proxy forwards to it).
    await installCoreDnsObjects(kubeConfig, ns.nodeIp);
    const corefile = [
      `.:53 {`,
      `  bind ${ns.nodeIp}`,
      '  errors',
      `  ready ${ns.nodeIp}:8181`,
      '  kubernetes cluster.local in-addr.arpa ip6.arpa {',
      `    kubeconfig ${corednsKc}`,
      '    pods insecure',
      '    fallthrough in-addr.arpa ip6.arpa',
      '  }',
      '  cache 30',
      '  loop',
      '  loadbalance',
      '}',
      '',
    ].join('\n');
    await writeFile(join(dir, 'Corefile'), corefile);
    const coredns = start('coredns', binaries.coredns, ['-conf', join(dir, 'Corefile')]);
    await waitFor('CoreDNS /ready', [coredns], () => httpOk(`http://${ns.nodeIp}:8181/ready`));

    // The default ServiceAccount exists once kube-controller-manager's serviceaccount controller ran.
    await waitFor('the default ServiceAccount', [kcm], async () => {
      await rawRequest(kubeConfig, '/api/v1/namespaces/default/serviceaccounts/default');
      return true;
    });

    return {
      kubeconfigPath: admin,
      kubeConfig,
      server,
      node: ns,
      dir,
      binaries,
      async importImages(archives) {
        for (const a of archives) await ctr('-n', 'k8s.io', 'images', 'import', a);
      },
      images: () => ctr('-n', 'k8s.io', 'images', 'ls'),
      async auditEvents() {
        const text = await readFile(auditLog, 'utf8').catch(() => '');
        return text
          .split('\n')
          .filter((line) => line.trim() !== '')
          .map((line) => JSON.parse(line) as AuditEvent);
      },
      logTail: (component, lines = 40) => procs.get(component)?.tail(lines) ?? '',
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The kube-dns Service (no selector) with an EndpointSlice naming the node's CoreDNS, and its RBAC. */
async function installCoreDnsObjects(kc: KubeConfig, nodeIp: string): Promise<void> {
  const objs = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'svc:coredns' },
      rules: [
        { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'svc:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'svc:coredns' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'svc:coredns' }],
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system' },
      spec: {
        clusterIP: DNS_SERVICE_IP,
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kube-dns-node',
        namespace: 'kube-system',
        labels: { 'kubernetes.io/service-name': 'kube-dns', 'endpointslice.kubernetes.io/managed-by': 'svc-test' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [nodeIp], conditions: { ready: true }, nodeName: NODE_NAME }],
      ports: [
        { name: 'dns', port: 53, protocol: 'UDP' },
        { name: 'dns-tcp', port: 53, protocol: 'TCP' },
      ],
    },
  ];
  for (const obj of objs) await serverSideApply(kc, obj, { fieldManager: 'svc-test-cluster' });
}
