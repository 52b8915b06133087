import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Every child this test process started and has not yet seen exit; killed when the test process exits. */
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** A control-plane binary running as a child process with its output in a log file. */
export interface Managed {
  readonly name: string;
  readonly child: ChildProcess;
  /** Resolves with the exit code (or signal) when the process has exited. */
  readonly exited: Promise<string>;
  /** Last lines of the log, for error messages. */
  tail(lines?: number): string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  terminate(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  /** File the parent-death watchdog reads to know which processes to kill. */
  pidFile: string;
  env?: NodeJS.ProcessEnv;
}

export function startProcess(options: StartOptions): Managed {
  installExitHook();
  appendFileSync(options.logFile, `\n==== ${new Date().toISOString()} ${options.command} ${options.args.join(' ')}\n`);
  const fd = openSync(options.logFile, 'a');
  const child = spawn(options.command, options.args, {
    stdio: ['ignore', fd, fd],
    env: options.env ?? process.env,
  });
  closeSync(fd);
  live.add(child);
  if (child.pid !== undefined) appendFileSync(options.pidFile, `${child.pid}\n`);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve(signal ?? String(code));
    });
    child.once('error', (err) => {
      live.delete(child);
      resolve(`spawn error: ${err.message}`);
    });
  });
  const tail = (lines = 30): string => {
    try {
      return readFileSync(options.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };
  const terminate = async (graceMs = 15_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null || !live.has(child)) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { name: options.name, child, exited, tail, terminate };
}

/**
 * Starts a detached shell that waits for this test process to disappear (even by SIGKILL, when no
 * exit hook runs) and then kills every pid listed in `pidFile`, runs `cleanup` (a shell snippet, if
 * given) and removes `dir`. Returns a function that stops the watchdog after a normal shutdown.
 */
export function startWatchdog(pidFile: string, dir: string, cleanup = ''): () => void {
  const script = [
    'parent="$1"; pids="$2"; dir="$3"',
    'while kill -0 "$parent" 2>/dev/null; do sleep 1; done',
    '[ -f "$pids" ] && kill -KILL $(cat "$pids") 2>/dev/null',
    'sleep 1',
    cleanup,
    'rm -rf "$dir"',
  ].join('\n');
  const watchdog = spawn('bash', ['-c', script, 'svc-envtest-watchdog', String(process.pid), pidFile, dir], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  return () => {
    watchdog.kill('SIGKILL');
  };
}

/**
 * A loopback TCP port that was free a moment ago. etcd and kube-apiserver cannot listen on port 0
 * and report back, so the harness picks ports this way and retries the start on a collision.
 */
/**
 * A port free on 127.0.0.1 for a process to bind next, picked below the kernel's range for
 * outgoing connections' local ports (ip_local_port_range): a port from that range can be given to
 * another process's outgoing connection between this check and the bind (it happened to a
 * kube-apiserver once). Random within the range, so parallel suites rarely pick the same one; a
 * port in use is skipped. Port 0 (the kernel's pick) when there is no room below that range.
 */
export async function freePort(): Promise<number> {
  // Below Kubernetes' NodePort range (30000–32767) too: the real cluster's Services take those.
  const ceiling = Math.min(ephemeralRangeStart(), 30_000);
  const floor = 10_000;
  for (let attempt = 0; ceiling - floor > 1_000 && attempt < 50; attempt++) {
    const port = floor + Math.floor(Math.random() * (ceiling - floor));
    if (await canListen(port)) return port;
  }
  return await listenOnce(0);
}

function ephemeralRangeStart(): number {
  try {
    const [low] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    return Number(low) || 32_768;
  } catch {
    return 32_768;
  }
}

async function canListen(port: number): Promise<boolean> {
  try {
    return (await listenOnce(port)) === port;
  } catch {
    return false;
  }
}

/** Listens on 127.0.0.1:`port`, closes, and resolves the port it got. */
function listenOnce(port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
