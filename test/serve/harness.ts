import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '../..');
const NODE = join(ROOT, 'node_modules/.bin/node');
const SVC = join(ROOT, 'bin/svc.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` as a real process and collects its output. */
export function svc(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(NODE, [SVC, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, SVC_DATA_DIR: '', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface ServeProcess {
  readonly dataDir: string;
  readonly port: number;
  readonly child: ChildProcess;
  output(): string;
  /** `svc <args> --data-dir <this data dir>` */
  cli(args: readonly string[], options?: { cwd?: string }): Promise<CliResult>;
  stop(): Promise<number | null>;
}

/**
 * Starts `svc serve` as a real process (frontend on 127.0.0.1 port 0 unless `args` say otherwise)
 * and waits for its ready banner, from which the frontend port is read.
 */
export function startServe(dataDir: string, args: readonly string[] = []): Promise<ServeProcess> {
  const listenArgs = args.includes('--listen') || args.includes('--config') ? [] : ['--listen', '127.0.0.1:0'];
  const child = spawn(NODE, [SVC, 'serve', '--data-dir', dataDir, ...listenArgs, ...args], {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: '', SVC_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`svc serve did not become ready:\n${out}\n${err}`)), 60_000);
    const onData = () => {
      const match = /frontend: {2}listening on port (\d+)/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      done({
        dataDir,
        port: Number(match[1]),
        child,
        output: () => out + err,
        cli: (cliArgs, options) => svc([...cliArgs, '--data-dir', dataDir], options),
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`svc serve exited (${code}) before it was ready:\n${out}\n${err}`));
    });
  });
}
