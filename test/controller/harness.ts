import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { MEDIA_TYPE } from '../../lib/api-client.ts';
import { OpenApi } from '../../controller/openapi.ts';
import { ROOT, tempDir } from '../serve/harness.ts';

export { tempDir };
export const NODE = join(ROOT, 'node_modules/.bin/node');
const SVC = join(ROOT, 'bin/svc.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` as a real process, writing `input` to its stdin (e.g. the `yes` of enroll). */
export function svcCli(
  args: readonly string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; prefix?: readonly string[] } = {},
): Promise<CliResult> {
  return new Promise((done, fail) => {
    const [command, ...argv] = [...(options.prefix ?? []), NODE, SVC, ...args] as [string, ...string[]];
    const child = spawn(command, argv, {
      cwd: ROOT,
      env: { ...process.env, SVC_DATA_DIR: '', SVC_API_ENDPOINT: '', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

export interface Process {
  readonly child: ChildProcess;
  output(): string;
  /** Resolves once the combined output matches `pattern` (from the start of the process). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  stop(): Promise<number | null>;
}

/** Starts `svc <args>` (info logs; `env` added to this process's) and waits until stdout shows `ready`. */
export async function startSvc(
  args: readonly string[],
  ready: RegExp,
  options: { prefix?: readonly string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<Process> {
  // `prefix` runs the command through another, e.g. `ip netns exec <ns>` (which execs, keeping the pid).
  const [command, ...argv] = [...(options.prefix ?? []), NODE, SVC, ...args] as [string, ...string[]];
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { ...process.env, SVC_DATA_DIR: '', SVC_LOG_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (c: Buffer) => {
    out += c.toString();
    for (const l of listeners) l();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const proc: Process = {
    child,
    output: () => out,
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(out);
          if (!m) return false;
          listeners.delete(listener);
          clearTimeout(timer);
          resolve(m);
          return true;
        };
        const listener = () => void check();
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`timed out waiting for ${pattern} in:\n${out}`));
        }, timeoutMs);
        listeners.add(listener);
        check();
      }),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  await Promise.race([
    proc.waitFor(ready, 60_000),
    exited.then((code) => {
      throw new Error(`svc ${args.join(' ')} exited (${code}) before it was ready:\n${out}`);
    }),
  ]);
  return proc;
}

export function writeYaml(path: string, lines: readonly string[]): string {
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

export interface ApiReply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

const openapi = new OpenApi();

/**
 * POST `{apiUrl}{path}` as a client of the API would, and check the answer against the OpenAPI
 * document (status documented for the operation, body valid for that status, media type) — every
 * API response in these tests goes through here.
 */
export async function api(
  apiUrl: string,
  path: string,
  body: unknown,
  options: { token?: string; contentType?: string; rawBody?: string } = {},
): Promise<ApiReply> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: {
      'content-type': options.contentType ?? MEDIA_TYPE,
      ...(options.token !== undefined ? { 'x-token': options.token } : {}),
    },
    body: options.rawBody ?? JSON.stringify(body),
  });
  const text = await res.text();
  expect(res.headers.get('content-type')).toBe(MEDIA_TYPE);
  const parsed = JSON.parse(text) as unknown;
  expect(openapi.validateResponse(path, res.status, parsed), `${path} ${res.status} ${text}`).toEqual([]);
  expect(text).not.toMatch(/\n\s+at /); // never a stack trace
  return { status: res.status, headers: res.headers, body: parsed };
}
