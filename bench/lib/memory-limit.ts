import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentResources } from '../../operator/pod.ts';

/**
 * A memory cgroup for the Node proxies of a benchmark, limited as the sidecar container is
 * (`limits.memory` of the share pods the operator writes, operator/pod.ts). Node reads that limit
 * at start-up and sizes V8's heap from it — in a 256 MiB container the young generation commits
 * 2 MiB instead of 16 — so a frontend measured without it is not the frontend that runs in a pod.
 * Processes are moved in before Node starts (see `inMemoryLimit`).
 */
export interface MemoryLimit {
  readonly bytes: number;
  /** The cgroup's process list: writing a pid there moves that process in. */
  readonly procsFile: string;
  remove(): void;
}

/** The sidecar container's memory limit in bytes (`256Mi` → 268435456). */
export function sidecarMemoryLimitBytes(): number {
  const text = agentResources.limits.memory;
  const match = /^(\d+)Mi$/.exec(text);
  if (!match) throw new Error(`unexpected sidecar memory limit ${text}`);
  return Number(match[1]) * 1024 * 1024;
}

/**
 * `--memory-limit pod|none|<MiB>` in MiB: `pod` is the sidecar container's limit, `none` no cgroup.
 * `parseMiB` reads a number of MiB (and says what is wrong with it).
 */
export function memoryLimitArg(text: string, parseMiB: (text: string) => number): number | undefined {
  if (text === 'pod') return sidecarMemoryLimitBytes() / 1048576;
  if (text === 'none') return undefined;
  return parseMiB(text);
}

/**
 * Creates a child of this process's own memory cgroup (v1 `memory.limit_in_bytes`, or v2
 * `memory.max`), or says why it cannot (not root, no memory controller).
 */
function createMemoryLimit(name: string, bytes: number): MemoryLimit | { readonly problem: string } {
  const own = readFileSync('/proc/self/cgroup', 'utf8').split('\n');
  const v1 = own.find((line) => line.split(':')[1]?.split(',').includes('memory'));
  const base = v1
    ? join('/sys/fs/cgroup/memory', v1.split(':')[2] ?? '/')
    : join('/sys/fs/cgroup', own.find((line) => line.startsWith('0::'))?.slice(3) ?? '/');
  const limitFile = v1 ? 'memory.limit_in_bytes' : 'memory.max';
  if (!v1 && !readIfExists(join(base, 'cgroup.subtree_control'))?.includes('memory'))
    return { problem: `no memory controller for child cgroups of ${base}` };
  const dir = join(base, `${name}-${process.pid}`);
  try {
    mkdirSync(dir);
    writeFileSync(join(dir, limitFile), String(bytes));
  } catch (error) {
    return { problem: `cannot create a memory cgroup at ${dir}: ${(error as Error).message}` };
  }
  return {
    bytes,
    procsFile: join(dir, 'cgroup.procs'),
    remove: () => {
      // Fails while a process is still inside (then the OS removes nothing and the dir stays).
      if (existsSync(dir)) rmdirSync(dir);
    },
  };
}

/**
 * One memory cgroup per process, as each container has its own limit (a shared one would let one
 * contender's memory push another into reclaim or the OOM killer). Without `bytes`, or where no
 * cgroup can be made (said once on stderr), processes run unlimited.
 */
export class MemoryLimits {
  private readonly made: MemoryLimit[] = [];
  private failed = false;

  readonly bytes: number | undefined;

  constructor(bytes: number | undefined) {
    this.bytes = bytes;
  }

  /** A fresh cgroup for one process, or undefined (no limit). */
  next(): MemoryLimit | undefined {
    if (this.bytes === undefined || this.failed) return undefined;
    const created = createMemoryLimit(`svc-bench-${this.made.length + 1}`, this.bytes);
    if ('problem' in created) {
      this.failed = true;
      process.stderr.write(`running without a memory limit: ${created.problem}\n`);
      return undefined;
    }
    this.made.push(created);
    return created;
  }

  /** Removes the cgroups (after their processes have exited). */
  removeAll(): void {
    for (const limit of this.made.splice(0)) limit.remove();
  }
}

/** `command args` started inside the cgroup: a shell moves itself in, then becomes the command. */
export function inMemoryLimit(
  limit: MemoryLimit | undefined,
  command: string,
  args: readonly string[],
): { command: string; args: string[] } {
  if (!limit) return { command, args: [...args] };
  return { command: 'sh', args: ['-c', 'echo $$ > "$0" && exec "$@"', limit.procsFile, command, ...args] };
}

function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
