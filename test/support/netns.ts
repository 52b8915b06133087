import { execFileSync } from 'node:child_process';

/**
 * Network namespaces for tests that need real network separation (root only). A lab is one bridge
 * on this machine with an address `10.231.<n>.1/24` and one namespace per "machine", joined to the
 * bridge by a veth pair (`10.231.<n>.<k+1>` inside). A namespace's own loopback is unreachable from
 * here, and nothing is routed beyond the bridge: traffic stays between this machine's bridge address
 * and the namespaces the test created.
 *
 * Every name carries the creating process id (`svctun<pid>…`), so `removeLeftovers` can delete what
 * a crashed run left behind without touching a concurrent run's namespaces.
 */
export interface NetnsLab {
  /** This machine's address on the bridge (where namespaces reach servers of the test). */
  readonly hostAddress: string;
  /** Namespace name and its address, per machine name given to `createLab`. */
  readonly machines: Record<string, { readonly netns: string; readonly address: string }>;
  /** The command line that runs `argv` inside a machine's namespace. */
  exec(machine: string, argv: readonly string[]): string[];
  remove(): void;
}

const PREFIX = 'svctun';

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function tryIp(...args: string[]): void {
  try {
    ip(...args);
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Deletes namespaces and links of earlier runs whose process is gone. */
export function removeLeftovers(): void {
  for (const line of ip('netns', 'list').split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const pid = Number(new RegExp(`^${PREFIX}(\\d+)`).exec(name)?.[1]);
    if (pid && pid !== process.pid && !alive(pid)) tryIp('netns', 'del', name);
  }
  for (const line of ip('-o', 'link', 'show').split('\n')) {
    const name = /^\d+: ([^:@]+)/.exec(line)?.[1] ?? '';
    const pid = Number(/^st(\d+)[bv]/.exec(name)?.[1]);
    if (pid && pid !== process.pid && !alive(pid)) tryIp('link', 'del', name);
  }
}

/** Creates the bridge and one namespace per machine name. Undo with `remove()` (also on failure). */
export function createLab(machineNames: readonly string[]): NetnsLab {
  removeLeftovers();
  const pid = process.pid;
  const subnet = `10.231.${pid % 250}`;
  // Link names are at most 15 characters: st<pid><b|v><index>.
  const bridge = `st${pid}b`;
  const machines: Record<string, { netns: string; address: string }> = {};
  const lab: NetnsLab = {
    hostAddress: `${subnet}.1`,
    machines,
    exec: (machine, argv) => ['ip', 'netns', 'exec', (machines[machine] as { netns: string }).netns, ...argv],
    remove: () => {
      for (const { netns } of Object.values(machines)) tryIp('netns', 'del', netns);
      tryIp('link', 'del', bridge);
    },
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    machineNames.forEach((name, i) => {
      const netns = `${PREFIX}${pid}-${name}`;
      const outside = `st${pid}v${i}`;
      const address = `${subnet}.${i + 2}`;
      ip('netns', 'add', netns);
      machines[name] = { netns, address };
      ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
      ip('link', 'set', outside, 'master', bridge);
      ip('link', 'set', outside, 'up');
      ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      ip('-n', netns, 'link', 'set', 'eth0', 'up');
      ip('-n', netns, 'link', 'set', 'lo', 'up');
    });
  } catch (err) {
    lab.remove();
    throw err;
  }
  return lab;
}
