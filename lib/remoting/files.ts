import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SvcError, errorText } from '../errors.ts';
import { writeFileAtomic } from '../atomic-file.ts';

export const ENVIRONMENT_FILE = 'environment.json';
export const ENROLLMENT_FILE = 'agent-enrollment.json';

/** Written by `svc enable` in the agent's data directory (mode 0600): this machine's environment. */
export interface EnvironmentFile {
  readonly version: 1;
  /** Base URL of the controller (`--api-endpoint`), without `/api/v1`. */
  readonly apiEndpoint: string;
  readonly envZId: string;
  /** The account token the environment was enabled with; `svc agent enroll|unenroll` use it. */
  readonly accountToken: string;
  /**
   * The environment's own credential (`svcv_…`): opens its tunnel and publishes its shares. Absent
   * in files written before tunnels existed (`svc disable` and `svc enable` again to get one).
   */
  readonly environmentToken?: string;
}

/** Written by `svc agent enroll` (mode 0600): remote control by one pinned controller. */
export interface EnrollmentFile {
  readonly version: 1;
  readonly apiEndpoint: string;
  readonly envZId: string;
  /** Non-secret id of the enrollment, safe to log. */
  readonly enrollmentId: string;
  /** The secret enrollment token that authenticates the agent's connection. */
  readonly token: string;
  /** The controller identity pinned at enrollment: only commands signed by this key run. */
  readonly controller: { readonly zId: string; readonly publicKey: string };
  readonly enrolledAt: string;
}

export function environmentPath(dataDir: string): string {
  return join(dataDir, ENVIRONMENT_FILE);
}

export function enrollmentPath(dataDir: string): string {
  return join(dataDir, ENROLLMENT_FILE);
}

export function writeJsonFile(path: string, value: unknown): void {
  writeFileAtomic(path, `${JSON.stringify(value, null, 2)}\n`);
}

export function removeFile(path: string): boolean {
  try {
    rmSync(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Reads the environment file; undefined when the machine was never enabled. */
export function readEnvironment(dataDir: string): EnvironmentFile | undefined {
  const doc = readJson(environmentPath(dataDir));
  if (doc === undefined) return undefined;
  const d = (doc ?? {}) as Partial<EnvironmentFile>;
  if (
    d.version !== 1 ||
    !isString(d.apiEndpoint) ||
    !isString(d.envZId) ||
    !isString(d.accountToken) ||
    (d.environmentToken !== undefined && !isString(d.environmentToken))
  ) {
    throw corrupt(environmentPath(dataDir), 'svc enable');
  }
  return d as EnvironmentFile;
}

/** Reads and checks the enrollment file; undefined when the agent is not enrolled. */
export function readEnrollment(dataDir: string): EnrollmentFile | undefined {
  const path = enrollmentPath(dataDir);
  const doc = readJson(path);
  if (doc === undefined) return undefined;
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) {
    throw new SvcError('enrollment_insecure', `${path} is readable by others (mode ${mode.toString(8)}): chmod 600 it`);
  }
  if (!isEnrollmentFile(doc)) throw corrupt(path, 'svc agent enroll');
  return doc;
}

/**
 * Whether a parsed document is an enrollment (version 1, every field present): the data
 * directory's `agent-enrollment.json` and the environment agent's mounted enrollment Secret.
 */
export function isEnrollmentFile(doc: unknown): doc is EnrollmentFile {
  const d = (doc ?? {}) as Partial<EnrollmentFile>;
  return (
    d.version === 1 &&
    isString(d.apiEndpoint) &&
    isString(d.envZId) &&
    isString(d.enrollmentId) &&
    isString(d.token) &&
    isString(d.controller?.zId) &&
    isString(d.controller?.publicKey)
  );
}

function readJson(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SvcError('file_unreadable', `cannot read ${path}: ${errorText(err)}`, { cause: err });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

function corrupt(path: string, command: string): SvcError {
  return new SvcError('file_corrupt', `${path} is not a valid ${command} file; remove it and run ${command} again`);
}

function isString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}
