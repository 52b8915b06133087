/**
 * The test cluster's "machine": new PID, mount and network namespaces on this host, created with
 * `unshare`, whose PID 1 is the Kubernetes pause program. Every cluster process is started inside
 * them with `nsenter`, so
 * - the node's network (loopback, the CNI bridge, pod interfaces, kube-proxy's and the bridge
 *   plugin's iptables rules, sysctls such as ip_forward) exists only in that network namespace;
 * - its mounts (overlay root filesystems, Secret tmpfs volumes, a private /run and /var/log) exist
 *   only in that mount namespace (propagation slave: nothing leaks back to the host);
 * - killing PID 1 makes the kernel kill every process inside, containerd's shims and the containers
 *   included, after which the namespaces, their mounts and the veth pair disappear by themselves.
 *
 * One veth pair joins the node to the host: `hostIp` (this side) and `nodeIp` (the node's
 * `eth0`), a random /30 in 10.251.0.0/16 that no host interface uses. The host side carries no
 * route to anything else, and the node has no default route: traffic stays between the two.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleep, startProcess, type Managed, type StartOptions } from '../processes.ts';

const exec = promisify(execFile);

export interface NodeNamespace {
  /** Host-side address of the veth pair (the test process can listen here for pods). */
  hostIp: string;
  /** The node's address (its `eth0`), where the API server, kubelet and CoreDNS listen. */
  nodeIp: string;
  /** Host-side interface name. */
  hostInterface: string;
  /** Starts a program inside the node's namespaces (through `nsenter`). */
  start(options: StartOptions): Managed;
  /** Runs a command inside the node's namespaces to completion; rejects with its output on failure. */
  run(command: string, args: string[]): Promise<string>;
  /** Kills PID 1 of the node (and so everything inside) and waits until the namespaces are gone. */
  destroy(): Promise<void>;
}

function pickSubnet(): { hostIp: string; nodeIp: string } {
  const used = new Set(
    Object.values(networkInterfaces())
      .flat()
      .map((a) => a?.address),
  );
  for (;;) {
    const third = randomInt(0, 256);
    const base = randomInt(0, 64) * 4;
    const hostIp = `10.251.${third}.${base + 1}`;
    const nodeIp = `10.251.${third}.${base + 2}`;
    if (!used.has(hostIp) && !used.has(nodeIp)) return { hostIp, nodeIp };
  }
}

/** The single child of `pid` (unshare's forked PID 1), once it exists. */
async function childOf(pid: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
    const child = Number(children.trim().split(/\s+/)[0]);
    if (child > 0) return child;
    await sleep(50);
  }
  throw new Error(`unshare (pid ${pid}) started no child`);
}

/**
 * Creates the node's namespaces under `dir` and prepares them: loopback up, a fresh sysfs for the
 * node's network (the bridge plugin writes /sys/class/net/<if>/brport), the host's cgroup
 * hierarchies kept, a private tmpfs on /run and a private /var/log, forwarding on, bridged traffic
 * through iptables (kube-proxy needs it for Service hairpin traffic).
 */
export async function createNodeNamespace(dir: string, pidFile: string, pause: string): Promise<NodeNamespace> {
  const nodeDir = join(dir, 'node');
  await mkdir(join(nodeDir, 'var-log'), { recursive: true });
  await mkdir(join(nodeDir, 'cgroup-keep'), { recursive: true });
  const holder = startProcess({
    name: 'node-pid1',
    command: '/usr/bin/unshare',
    args: ['--pid', '--fork', '--kill-child', '--mount-proc', '--net', '--propagation', 'slave', '--', pause],
    logFile: join(dir, 'node-pid1.log'),
    pidFile,
  });
  const pid1 = await childOf(holder.child.pid ?? 0);
  const enter = ['--target', String(pid1), '--mount', '--net', '--pid', '--'];
  const start = (options: StartOptions): Managed =>
    startProcess({ ...options, command: '/usr/bin/nsenter', args: [...enter, options.command, ...options.args] });
  const run = async (command: string, args: string[]): Promise<string> => {
    try {
      const { stdout } = await exec('/usr/bin/nsenter', [...enter, command, ...args], { maxBuffer: 16 << 20 });
      return stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new Error(`in the node: ${command} ${args.join(' ')}: ${e.stderr || e.message}`, { cause: err });
    }
  };

  const { hostIp, nodeIp } = pickSubnet();
  const hostInterface = `svcn${randomBytes(3).toString('hex')}`;
  const keep = join(nodeDir, 'cgroup-keep');
  await run('/bin/sh', [
    '-euc',
    [
      'ip link set lo up',
      `mount --rbind /sys/fs/cgroup ${keep}`,
      'mount -t sysfs sysfs /sys',
      `mount --move ${keep} /sys/fs/cgroup`,
      'mount -t tmpfs -o mode=0755 tmpfs /run',
      `mount --bind ${join(nodeDir, 'var-log')} /var/log`,
      'sysctl -qw net.ipv4.ip_forward=1',
      'sysctl -qw net.bridge.bridge-nf-call-iptables=1',
    ].join('\n'),
  ]);
  await exec('ip', ['link', 'add', hostInterface, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(pid1)]);
  await exec('ip', ['addr', 'add', `${hostIp}/30`, 'dev', hostInterface]);
  await exec('ip', ['link', 'set', hostInterface, 'up']);
  await run('/bin/sh', ['-euc', `ip addr add ${nodeIp}/30 dev eth0\nip link set eth0 up`]);

  const destroy = async (): Promise<void> => {
    // SIGKILL to unshare: --kill-child passes it to PID 1, and the kernel ends the namespace.
    holder.child.kill('SIGKILL');
    await holder.exited;
    for (let i = 0; i < 100; i++) {
      if (!(await exists(`/proc/${pid1}`))) break;
      await sleep(100);
    }
  };
  return { hostIp, nodeIp, hostInterface, start, run, destroy };
}

async function exists(path: string): Promise<boolean> {
  try {
    await readFile(join(path, 'stat'));
    return true;
  } catch {
    return false;
  }
}
