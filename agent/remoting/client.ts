import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { BackoffPolicy } from '../../lib/backoff.ts';
import { SvcError, errorText } from '../../lib/errors.ts';
import type { Logger } from '../../lib/logger.ts';
import { publicKeyFromRaw } from '../../lib/remoting/identity.ts';
import type { RemoteExecutor, RemoteHealthCheckArgs, RemoteShareArgs } from './executor.ts';
import type { EnrollmentFile } from '../../lib/remoting/files.ts';
import { CommandGuard } from './guard.ts';
import {
  CLOSE_UNENROLLED,
  ENROLLMENT_HEADER,
  REMOTING_PATH,
  enrollmentHash,
  type CommandMessage,
  type CommandPayload,
  type HelloMessage,
  type ResultMessage,
} from '../../lib/remoting/protocol.ts';
import { ReconnectingSocket } from '../websocket.ts';

export interface RemotingClientOptions {
  readonly enrollment: EnrollmentFile;
  readonly executor: RemoteExecutor;
  readonly logger: Logger;
  readonly backoff?: BackoffPolicy;
}

/** Without a ping from the controller (sent every 20 s) for this long, the connection is dead. */
const IDLE_MS = 60_000;
const MAX_MESSAGE_BYTES = 256 * 1024;

/** The enrollment token as it may be logged: its non-secret prefix only. */
export function redactedToken(enrollment: EnrollmentFile): string {
  return `svce_${enrollment.enrollmentId}_…`;
}

/**
 * The enrolled agent's end of remoting: an outbound WebSocket to the controller it enrolled with
 * (so it works behind NAT and from a pod), reconnected with jittered exponential backoff. Every
 * command goes through the CommandGuard (pinned identity, fresh, not replayed, this enrollment and
 * connection) before the executor runs it; a refused command is logged and answered with
 * `command_refused`, never run.
 */
export class RemotingClient extends ReconnectingSocket {
  private readonly options: RemotingClientOptions;
  private readonly guard: CommandGuard;
  private readonly url: string;
  private idle: NodeJS.Timeout | undefined;

  constructor(options: RemotingClientOptions) {
    super(options.backoff);
    this.options = options;
    this.guard = new CommandGuard({
      publicKey: publicKeyFromRaw(options.enrollment.controller.publicKey),
      enrollmentHash: enrollmentHash(options.enrollment.token),
    });
    const base = new URL(options.enrollment.apiEndpoint);
    base.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
    this.url = new URL(REMOTING_PATH, base).href;
  }

  start(): void {
    const { enrollment, logger } = this.options;
    logger.info(
      { enrollment: enrollment.enrollmentId, controller: enrollment.controller.zId, url: this.url },
      `listening for remote commands at ${redactedToken(enrollment)}`,
    );
    this.dial();
  }

  override close(): Promise<void> {
    clearTimeout(this.idle);
    return super.close();
  }

  protected open(): WebSocket {
    const { enrollment, logger } = this.options;
    const channel = randomBytes(16).toString('base64url');
    const socket = new WebSocket(this.url, {
      headers: { [ENROLLMENT_HEADER]: enrollment.token },
      maxPayload: MAX_MESSAGE_BYTES,
      handshakeTimeout: 10_000,
    });
    socket.on('open', () => {
      this.succeeded();
      this.resetIdle(socket);
      const hello: HelloMessage = { type: 'hello', v: 1, channel };
      socket.send(JSON.stringify(hello));
      logger.info({ enrollment: enrollment.enrollmentId }, 'remoting: connected to the controller');
    });
    socket.on('ping', () => this.resetIdle(socket));
    socket.on('message', (data: Buffer) => this.onMessage(socket, channel, data));
    socket.on('unexpected-response', (_req, res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      res.resume();
      if (status === 401 || status === 403) {
        logger.warn(
          { enrollment: enrollment.enrollmentId, status },
          'remoting: the controller no longer accepts this enrollment (unenrolled?). This error is harmless: remove agent-enrollment.json (svc agent unenroll) or restart to stop it',
        );
      } else {
        logger.warn({ status }, 'remoting: the controller refused the connection');
      }
      socket.terminate();
    });
    socket.on('error', (err) => {
      logger.warn({ err: errorText(err) }, 'remoting: connection to the controller failed; retrying');
    });
    socket.on('close', () => clearTimeout(this.idle));
    return socket;
  }

  protected shouldRetry(code: number): boolean {
    if (code !== CLOSE_UNENROLLED) return true;
    this.options.logger.warn(
      { enrollment: this.options.enrollment.enrollmentId },
      'remoting: the controller removed this enrollment; remote control is off (harmless; enroll again to restore it)',
    );
    return false;
  }

  private resetIdle(socket: WebSocket): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => socket.terminate(), IDLE_MS);
  }

  private onMessage(socket: WebSocket, channel: string, data: Buffer): void {
    const { logger } = this.options;
    let message: CommandMessage;
    try {
      message = JSON.parse(data.toString('utf8')) as CommandMessage;
    } catch {
      logger.warn('remoting: refused a message that is not JSON');
      return;
    }
    if (message?.type !== 'command') return;
    const verdict = this.guard.check(message, channel);
    if (!verdict.accepted) {
      logger.warn({ reason: verdict.reason, commandId: verdict.id }, 'remoting: refused remote command');
      if (verdict.id) {
        reply(socket, {
          type: 'result',
          id: verdict.id,
          ok: false,
          error: { code: 'command_refused', message: `the agent refused the command: ${verdict.reason}`, status: 403 },
        });
      }
      return;
    }
    const { payload } = verdict;
    this.execute(payload).then(
      (result) => {
        logger.info({ command: payload.command, commandId: payload.id }, 'remoting: ran remote command');
        reply(socket, { type: 'result', id: payload.id, ok: true, result });
      },
      (err: unknown) => {
        const known = err instanceof SvcError && err.status < 500;
        if (!known) logger.error({ command: payload.command, err: errorText(err) }, 'remoting: remote command failed');
        else logger.info({ command: payload.command, code: err.code }, 'remoting: remote command refused by the agent');
        reply(socket, {
          type: 'result',
          id: payload.id,
          ok: false,
          error: known
            ? {
                code: err.code,
                message: err.message,
                status: err.status,
                ...(err.problems.length > 0 ? { problems: err.problems } : {}),
              }
            : { code: 'agent_error', message: 'the agent failed to run the command', status: 500 },
        });
      },
    );
  }

  private async execute(payload: CommandPayload): Promise<unknown> {
    const { executor } = this.options;
    const args = payload.args;
    switch (payload.command) {
      case 'ping':
        return { pong: true };
      case 'share':
        return executor.share(args as unknown as RemoteShareArgs);
      case 'unshare':
        await executor.unshare({ token: String(args.token) });
        return {};
      case 'status':
        return executor.status();
      case 'access':
        return executor.access({
          shareToken: String(args.shareToken),
          ...(typeof args.bindAddress === 'string' ? { bindAddress: args.bindAddress } : {}),
        });
      case 'unaccess':
        await executor.unaccess({ token: String(args.token) });
        return {};
      case 'healthcheck':
        return executor.healthcheck(args as unknown as RemoteHealthCheckArgs);
    }
  }
}

function reply(socket: WebSocket, message: ResultMessage): void {
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
}
