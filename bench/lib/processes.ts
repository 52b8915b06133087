import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inMemoryLimit, type MemoryLimit } from './memory-limit.ts';

/**
 * Child processes of a benchmark: every server and load generator runs in its own process, so none
 * shares an event loop with what it measures. Each child is registered and stopped on exit, on
 * failure and on SIGINT/SIGTERM (see `installCleanup`).
 */
export interface BenchProcess<T> {
  readonly name: string;
  readonly pid: number;
  /** What the ready matcher extracted from the child's output. */
  readonly ready: T;
  /** The child's recent output (stdout and stderr, last 64 KiB), for error messages. */
  output(): string;
  /** Resolves with the exit code (or signal name) once the child has exited. */
  readonly exited: Promise<number | string>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the child is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions<T> {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Called for each output line (stdout and stderr) until it returns a value: the child is then ready. */
  readonly ready?: (line: string) => T | undefined;
  /** Or polled every 100 ms until it resolves to a value (for children that print nothing, like nginx). */
  readonly probe?: () => Promise<T | undefined>;
  /** Give up (and kill the child) when it is not ready within this time. */
  readonly timeoutMs?: number;
}

const running = new Set<{ child: ChildProcess; name: string }>();
const OUTPUT_LIMIT = 64 * 1024;

export function startProcess<T>(options: StartOptions<T>): Promise<BenchProcess<T>> {
  const child = spawn(options.command, [...options.args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const entry = { child, name: options.name };
  running.add(entry);
  let output = '';
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(entry);
      resolve(code ?? signal ?? 'unknown');
    });
  });
  const stop = async (graceMs = 3000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };

  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (message: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop(500);
      reject(new Error(`${options.name}: ${message}\n--- output ---\n${output.slice(-4000)}`));
    };
    const timer = setTimeout(
      () => fail(`not ready within ${options.timeoutMs ?? 20_000} ms`),
      options.timeoutMs ?? 20_000,
    );
    child.once('error', (err) => fail(`cannot start ${options.command}: ${err.message}`));
    void exited.then((code) => fail(`exited before it was ready (${code})`));

    const becomeReady = (value: T): void => {
      settled = true;
      clearTimeout(timer);
      resolve({ name: options.name, pid: child.pid as number, ready: value, output: () => output, exited, stop });
    };
    const poll = async (): Promise<void> => {
      while (!settled && options.probe) {
        const value = await options.probe().catch(() => undefined);
        if (value !== undefined && !settled) return becomeReady(value);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    void poll();

    const onData = (): ((chunk: Buffer) => void) => {
      let partial = '';
      return (chunk) => {
        const text = chunk.toString('utf8');
        output = (output + text).slice(-OUTPUT_LIMIT);
        if (settled) return;
        const lines = (partial + text).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          const value = options.ready?.(line);
          if (value === undefined) continue;
          becomeReady(value);
          return;
        }
      };
    };
    child.stdout.on('data', onData());
    child.stderr.on('data', onData());
  });
}

/** Stops every child still running (SIGTERM, then SIGKILL). */
export async function stopAll(graceMs = 3000): Promise<void> {
  await Promise.all(
    [...running].map(async ({ child }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await new Promise((resolve) => child.once('exit', resolve));
      clearTimeout(timer);
    }),
  );
}

/**
 * Makes sure no child outlives the benchmark: on SIGINT/SIGTERM the children are stopped and the
 * process exits; on a plain exit any child left is killed synchronously.
 */
export function installCleanup(): void {
  const onSignal = (signal: NodeJS.Signals): void => {
    process.stderr.write(`\n${signal}: stopping child processes\n`);
    void stopAll(1000).finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', () => {
    for (const { child } of running) child.kill('SIGKILL');
    for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
  });
}

const scratchDirs = new Set<string>();

/** A new temporary directory, removed by `removeScratchDir` or at the latest when the process exits. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  scratchDirs.add(dir);
  return dir;
}

export function removeScratchDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  scratchDirs.delete(dir);
}

/** Name of the READY line a module child prints (see run-module.ts). */
export const READY_PREFIX = 'BENCH_READY ';

/**
 * Runs `exportName(arg)` from a TypeScript module in a child Node process (bench/lib/run-module.ts).
 * The function's JSON-serialisable result is returned; a result with `close()` keeps the child
 * running as a server until it is stopped. The argument travels in an environment variable, so
 * cookies and keys never appear in a process listing.
 */
export function startModule<T>(
  name: string,
  modulePath: string,
  exportName: string,
  arg: unknown,
  timeoutMs = 20_000,
  options: {
    readonly memoryLimit?: MemoryLimit | undefined;
    readonly env?: Readonly<Record<string, string>>;
    readonly nodeFlags?: readonly string[];
  } = {},
): Promise<BenchProcess<T>> {
  return startProcess<T>({
    name,
    ...inMemoryLimit(options.memoryLimit, process.execPath, [
      ...(options.nodeFlags ?? []),
      fileURLToPath(new URL('./run-module.ts', import.meta.url)),
      modulePath,
      exportName,
    ]),
    env: { ...process.env, ...options.env, BENCH_MODULE_ARG: JSON.stringify(arg ?? null) },
    timeoutMs,
    ready: (line) => (line.startsWith(READY_PREFIX) ? (JSON.parse(line.slice(READY_PREFIX.length)) as T) : undefined),
  });
}

/** Memory figures of a live process from /proc/<pid>/status, in KiB (undefined where not available). */
/** The pids of a process's children (Linux /proc; a node:cluster primary's workers). */
export function childPids(pid: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim();
    return text ? text.split(/\s+/).map(Number) : [];
  } catch {
    return [];
  }
}

/** VmRSS, VmHWM (peak RSS) and RssAnon (private: RSS less the file pages of the binary and libraries, shared between processes). */
export function memoryKiB(pid: number): { rss?: number; peak?: number; anon?: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (key: string): number | undefined => {
      const match = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status);
      return match ? Number(match[1]) : undefined;
    };
    const rss = field('VmRSS');
    const peak = field('VmHWM');
    const anon = field('RssAnon');
    return {
      ...(rss !== undefined ? { rss } : {}),
      ...(peak !== undefined ? { peak } : {}),
      ...(anon !== undefined ? { anon } : {}),
    };
  } catch {
    return {};
  }
}

let clockTicks: number | undefined;

/** The kernel's clock ticks per second, the unit of /proc's CPU times (asked once). */
function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return clockTicks;
}

/** The fields of a `/proc/<pid>/stat` after the parenthesised command name (which may contain spaces). */
function statFields(path: string): string[] | undefined {
  try {
    const stat = readFileSync(path, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Seconds of two clock-tick fields of /proc/<pid>/stat (numbered after the command name; 11 = utime). */
function statSeconds(path: string, first: number): number | undefined {
  const fields = statFields(path);
  if (!fields) return undefined;
  return (Number(fields[first]) + Number(fields[first + 1])) / ticksPerSecond();
}

/** The ids of a live process's threads (its own pid among them), or undefined when it is gone. */
function threadIds(pid: number): string[] | undefined {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
}

/**
 * Page faults of a live process that had to wait for a read from disk (majflt): a page of its
 * binary or of a file it maps that the kernel had dropped. Each is a stall of the faulting thread.
 */
export function majorFaults(pid: number): number | undefined {
  const fields = statFields(`/proc/${pid}/stat`);
  return fields ? Number(fields[9]) : undefined;
}

/** CPU time (user + system) a live process has used so far, in seconds; undefined when unknown. */
export function cpuSeconds(pid: number): number | undefined {
  return statSeconds(`/proc/${pid}/stat`, 11);
}

/** Time a process's threads spent runnable but waiting for a core, and how many times they were given one. */
export interface CoreWait {
  readonly waitSeconds: number;
  readonly slices: number;
}

/**
 * The scheduler's own account of a process (`schedstat` of each of `/proc/<pid>/task`: time on a core, time
 * runnable on a run queue, time slices), summed over its threads. The run-queue time is what a
 * request loses when its proxy wakes up and finds both cores taken, which a CPU profile cannot see.
 */
export function coreWait(pid: number): CoreWait | undefined {
  const tasks = threadIds(pid);
  if (!tasks) return undefined;
  let waitNs = 0;
  let slices = 0;
  let read = 0;
  for (const task of tasks) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').trim().split(' ').map(Number);
      waitNs += fields[1] ?? 0;
      slices += fields[2] ?? 0;
      read += 1;
    } catch {
      // the thread ended meanwhile
    }
  }
  return read > 0 ? { waitSeconds: waitNs / 1e9, slices } : undefined; // none: a kernel without schedstat
}

/**
 * The kernel's softirq threads (`ksoftirqd/<cpu>`). Loopback packets are handed over in softirq
 * context; when that work is deferred to these threads, every packet on that core waits until the
 * scheduler runs them, so their wait for a core is a delay no process's own account shows. Taken
 * from a reading of every process (kernel threads are named in brackets there).
 */
export function softirqThreadPids(every: Map<number, ProcessCpu> = cpuOfEveryProcess()): number[] {
  return [...every.values()].filter((p) => p.name.startsWith('[ksoftirqd/')).map((p) => p.pid);
}

/** A process seen on the machine, and the CPU seconds it has used so far. */
export interface ProcessCpu {
  readonly pid: number;
  /** Its command and first two arguments (`node svc.js frontend`), or the kernel thread's name. */
  readonly name: string;
  readonly seconds: number;
}

/**
 * Every process on the machine with its CPU time so far (threads included), kernel threads too:
 * read before and after a run, the difference says who else had the cores meanwhile.
 */
export function cpuOfEveryProcess(): Map<number, ProcessCpu> {
  const all = new Map<number, ProcessCpu>();
  for (const pid of readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)) {
    const seconds = cpuSeconds(pid);
    if (seconds === undefined) continue;
    all.set(pid, { pid, name: processName(pid), seconds });
  }
  return all;
}

function processName(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const [command, ...args] = argv;
    if (command !== undefined)
      return [command, ...args.filter((arg) => !arg.startsWith('-')).slice(0, 2)]
        .map((arg) => arg.split('/').at(-1))
        .join(' ');
    return `[${readFileSync(`/proc/${pid}/comm`, 'utf8').trim()}]`;
  } catch {
    return '?';
  }
}

/** The machine's CPU time by kind, all cores together, in seconds (the first line of /proc/stat). */
export interface MachineCpu {
  readonly user: number;
  readonly system: number;
  readonly idle: number;
  readonly iowait: number;
  readonly irq: number;
  readonly softirq: number;
  readonly steal: number;
}

/** Read before and after a run: CPU time no process is charged with (interrupts, steal) shows here. */
export function machineCpu(): MachineCpu | undefined {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const ticks = line.split(/\s+/).slice(1).map(Number);
  if (ticks.length < 8 || ticks.some((t) => !Number.isFinite(t))) return undefined;
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = ticks.map(
    (t) => t / ticksPerSecond(),
  );
  return { user: user + nice, system, idle, iowait, irq, softirq, steal };
}

/**
 * CPU seconds of a process's threads other than its main one: in a Node process, V8's helpers
 * (concurrent marking and sweeping, the optimizing compiler) and libuv's pool, whose work the event
 * loop does not see. Threads that ended take theirs with them.
 */
export function helperThreadsCpuSeconds(pid: number): number | undefined {
  const tasks = threadIds(pid);
  if (!tasks) return undefined;
  let total = 0;
  for (const task of tasks) if (task !== String(pid)) total += statSeconds(`/proc/${pid}/task/${task}/stat`, 11) ?? 0;
  return total;
}

/**
 * CPU time (user + system) of this process's children that have exited and been waited for
 * (cutime + cstime): the difference around one load run is the load generator's CPU, although it
 * is gone by the time it could be read.
 */
export function exitedChildrenCpuSeconds(): number | undefined {
  return statSeconds('/proc/self/stat', 13);
}

/** Whether an executable of this name is on PATH. */
export function commandExists(name: string): boolean {
  return (process.env.PATH ?? '')
    .split(':')
    .filter(Boolean)
    .some((dir) => {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}
