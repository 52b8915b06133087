import { createHash, randomUUID, sign, verify, type KeyObject } from 'node:crypto';
import type { Problem } from '../errors.ts';

/**
 * The remoting wire protocol between the controller and an enrolled agent (docs/controller.md,
 * "Remoting"). The agent opens a WebSocket to `REMOTING_PATH` on the controller it enrolled with,
 * authenticated by its enrollment token, and sends `hello` with a fresh random `channel` nonce. The
 * controller then sends commands; each carries the exact signed JSON text (`payload`) and an
 * Ed25519 signature over its UTF-8 bytes by the controller identity. The signed payload binds the
 * command to this enrollment (hash of the enrollment token) and to this connection (`channel`), has
 * a unique `id` and an `issuedAt` time, so a captured command cannot be replayed on another
 * connection, to another agent, or later than the freshness window.
 */
export const REMOTING_PATH = '/api/v1/agent/remoting';
export const ENROLLMENT_HEADER = 'x-enrollment-token';
export const PROTOCOL_VERSION = 1;
/** A command is fresh when its issuedAt is within this much of the agent's clock (both ways). */
export const FRESHNESS_MS = 60_000;

/** WebSocket close codes the controller uses (4000-4999 are free for applications). */
export const CLOSE_UNENROLLED = 4001;
export const CLOSE_REPLACED = 4002;
export const CLOSE_PROTOCOL = 4003;

const COMMANDS = ['ping', 'share', 'unshare', 'status', 'access', 'unaccess', 'healthcheck'] as const;
export type CommandName = (typeof COMMANDS)[number];

export interface CommandPayload {
  readonly v: 1;
  readonly id: string;
  /** The agent's `hello.channel` of this connection. */
  readonly channel: string;
  /** SHA-256 (hex) of the enrollment token. */
  readonly enrollment: string;
  /** Milliseconds since the epoch, controller clock. */
  readonly issuedAt: number;
  readonly command: CommandName;
  readonly args: Record<string, unknown>;
}

export interface HelloMessage {
  readonly type: 'hello';
  readonly v: 1;
  readonly channel: string;
}

export interface CommandMessage {
  readonly type: 'command';
  readonly payload: string;
  readonly signature: string;
}

/** A refused or failed command: the agent's error code, message and status, and the problems of refused input. */
export interface ResultError {
  readonly code: string;
  readonly message: string;
  readonly status: number;
  readonly problems?: readonly Problem[];
}

export type ResultMessage =
  | { readonly type: 'result'; readonly id: string; readonly ok: true; readonly result: unknown }
  | { readonly type: 'result'; readonly id: string; readonly ok: false; readonly error: ResultError };

export function enrollmentHash(enrollmentToken: string): string {
  return createHash('sha256').update(enrollmentToken, 'utf8').digest('hex');
}

/** Controller side: a signed command message for one connection. */
export function signCommand(
  privateKey: KeyObject,
  fields: { channel: string; enrollment: string; command: CommandName; args: Record<string, unknown>; now?: number },
): { id: string; message: CommandMessage } {
  const id = randomUUID();
  const payload: CommandPayload = {
    v: PROTOCOL_VERSION,
    id,
    channel: fields.channel,
    enrollment: fields.enrollment,
    issuedAt: fields.now ?? Date.now(),
    command: fields.command,
    args: fields.args,
  };
  const text = JSON.stringify(payload);
  const signature = sign(null, Buffer.from(text, 'utf8'), privateKey).toString('base64url');
  return { id, message: { type: 'command', payload: text, signature } };
}

/** Agent side: does the signature over `payload` verify against the pinned public key? */
export function signatureValid(publicKey: KeyObject, message: CommandMessage): boolean {
  try {
    return verify(null, Buffer.from(message.payload, 'utf8'), publicKey, Buffer.from(message.signature, 'base64url'));
  } catch {
    return false;
  }
}

export function isCommandName(value: unknown): value is CommandName {
  return typeof value === 'string' && (COMMANDS as readonly string[]).includes(value);
}
