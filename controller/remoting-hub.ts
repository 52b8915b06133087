import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import {
  CLOSE_PROTOCOL,
  CLOSE_REPLACED,
  ENROLLMENT_HEADER,
  signCommand,
  type CommandName,
  type HelloMessage,
  type ResultError,
  type ResultMessage,
} from '../lib/remoting/protocol.ts';
import { isAgentErrorCode, isProblemCode } from '../lib/error-codes.ts';
import { SvcError, errorText, type Problem } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { apiError } from './errors.ts';
import type { ControllerIdentity } from '../lib/remoting/identity.ts';
import { hashesMatch, parseToken } from './tokens.ts';
import type { ControllerStore } from './store.ts';

interface Pending {
  resolve(value: unknown): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

interface AgentConnection {
  readonly socket: WebSocket;
  readonly envZId: string;
  readonly enrollmentId: string;
  readonly enrollmentHash: string;
  channel?: string;
  alive: boolean;
  readonly pending: Map<string, Pending>;
}

const HELLO_TIMEOUT_MS = 10_000;
const PING_INTERVAL_MS = 20_000;

/**
 * The controller's end of remoting: accepts the WebSocket each enrolled agent opens to
 * `/api/v1/agent/remoting` (authenticated by its enrollment token, compared by hash in constant
 * time), and sends it commands signed with the controller identity, matching answers by command id.
 * One live connection per environment: a newer one replaces the older.
 */
export class RemotingHub {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  private readonly connections = new Map<string, AgentConnection>();
  private readonly pinger: NodeJS.Timeout;
  private readonly options: {
    store: ControllerStore;
    identity: ControllerIdentity;
    logger: Logger;
    timeoutMs: number;
  };

  constructor(options: { store: ControllerStore; identity: ControllerIdentity; logger: Logger; timeoutMs: number }) {
    this.options = options;
    this.pinger = setInterval(() => this.pingAll(), PING_INTERVAL_MS);
    this.pinger.unref();
  }

  /** HTTP upgrade on the remoting path: authenticate, then hand the socket to ws. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    const header = req.headers[ENROLLMENT_HEADER];
    const parsed = typeof header === 'string' ? parseToken('svce', header) : undefined;
    if (!parsed) return refuse(401, 'Unauthorized');
    this.options.store.getEnrollment(parsed.id).then(
      (enrollment) => {
        if (!enrollment || !hashesMatch(parsed.hash, enrollment.tokenHash)) return refuse(401, 'Unauthorized');
        this.wss.handleUpgrade(req, socket, head, (ws) =>
          this.accept(ws, { envZId: enrollment.envZId, id: enrollment.id, hash: enrollment.tokenHash }),
        );
      },
      (err: unknown) => {
        this.options.logger.error({ err: errorText(err) }, 'remoting: store lookup failed');
        refuse(503, 'Service Unavailable');
      },
    );
  }

  /**
   * Sends a signed command to the environment's agent and resolves with its result. Errors:
   * `agent_unreachable` / `agent_timeout` / `agent_refused` (502), or the agent's own error
   * (`unknown_share` 404, validation 422).
   */
  call(envZId: string, command: CommandName, args: Record<string, unknown>): Promise<unknown> {
    const conn = this.connections.get(envZId);
    if (!conn?.channel) {
      return Promise.reject(
        apiError(
          'agent_unreachable',
          `the agent of environment ${envZId} is not connected to this controller (is its svc serve running?)`,
        ),
      );
    }
    const channel = conn.channel;
    const { id, message } = signCommand(this.options.identity.privateKey, {
      channel,
      enrollment: conn.enrollmentHash,
      command,
      args,
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        conn.pending.delete(id);
        reject(
          apiError(
            'agent_timeout',
            `the agent of environment ${envZId} did not answer within ${this.options.timeoutMs} ms`,
          ),
        );
      }, this.options.timeoutMs);
      conn.pending.set(id, { resolve, reject, timer });
      conn.socket.send(JSON.stringify(message), (err) => {
        if (!err) return;
        clearTimeout(timer);
        conn.pending.delete(id);
        reject(apiError('agent_unreachable', `cannot send to the agent of environment ${envZId}: ${err.message}`));
      });
    });
  }

  /** Closes the environment's connection (unenroll): the agent is told why by the close code. */
  disconnect(envZId: string, code: number, reason: string): void {
    const conn = this.connections.get(envZId);
    if (!conn) return;
    this.connections.delete(envZId);
    this.fail(conn, 'agent_unreachable', 'the agent was disconnected');
    conn.socket.close(code, reason);
  }

  isConnected(envZId: string): boolean {
    return Boolean(this.connections.get(envZId)?.channel);
  }

  close(): void {
    clearInterval(this.pinger);
    for (const conn of this.connections.values()) {
      this.fail(conn, 'agent_unreachable', 'the controller is shutting down');
      conn.socket.terminate();
    }
    this.connections.clear();
    this.wss.close();
  }

  private accept(socket: WebSocket, enrollment: { envZId: string; id: string; hash: string }): void {
    const { logger } = this.options;
    const conn: AgentConnection = {
      socket,
      envZId: enrollment.envZId,
      enrollmentId: enrollment.id,
      enrollmentHash: enrollment.hash,
      alive: true,
      pending: new Map(),
    };
    const helloTimer = setTimeout(() => socket.close(CLOSE_PROTOCOL, 'hello expected'), HELLO_TIMEOUT_MS);
    socket.on('pong', () => (conn.alive = true));
    socket.on('message', (data: Buffer) => {
      let message: HelloMessage | ResultMessage;
      try {
        message = JSON.parse(data.toString('utf8')) as HelloMessage | ResultMessage;
      } catch {
        socket.close(CLOSE_PROTOCOL, 'not JSON');
        return;
      }
      // An agent is its account's own code: `null`, a number or a list is valid JSON, and reading
      // `type` off `null` here would throw out of the socket's handler and end the controller.
      if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        socket.close(CLOSE_PROTOCOL, 'not a JSON object');
        return;
      }
      if (message.type === 'hello' && !conn.channel) {
        if (typeof message.channel !== 'string' || message.channel.length < 16) {
          socket.close(CLOSE_PROTOCOL, 'bad hello');
          return;
        }
        clearTimeout(helloTimer);
        conn.channel = message.channel;
        const previous = this.connections.get(conn.envZId);
        this.connections.set(conn.envZId, conn);
        if (previous && previous !== conn) {
          this.fail(previous, 'agent_unreachable', 'the agent reconnected');
          previous.socket.close(CLOSE_REPLACED, 'replaced by a newer connection');
        }
        logger.info({ envZId: conn.envZId, enrollment: conn.enrollmentId }, 'remoting: agent connected');
        return;
      }
      if (message.type === 'result' && typeof message.id === 'string') {
        const pending = conn.pending.get(message.id);
        if (!pending) return;
        conn.pending.delete(message.id);
        clearTimeout(pending.timer);
        if (message.ok) pending.resolve(message.result);
        else pending.reject(agentError(message.error));
      }
    });
    socket.on('close', () => {
      clearTimeout(helloTimer);
      if (this.connections.get(conn.envZId) === conn) {
        this.connections.delete(conn.envZId);
        logger.info({ envZId: conn.envZId, enrollment: conn.enrollmentId }, 'remoting: agent disconnected');
      }
      this.fail(conn, 'agent_unreachable', 'the agent disconnected before answering');
    });
    socket.on('error', (err) => logger.warn({ err: errorText(err), envZId: conn.envZId }, 'remoting: socket error'));
  }

  private fail(conn: AgentConnection, code: 'agent_unreachable', message: string): void {
    for (const pending of conn.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(apiError(code, message));
    }
    conn.pending.clear();
  }

  private pingAll(): void {
    for (const conn of this.connections.values()) {
      if (!conn.alive) {
        conn.socket.terminate();
        continue;
      }
      conn.alive = false;
      conn.socket.ping();
    }
  }
}

/**
 * An agent's error answer, as an API error: refusals and failures are 502; its input errors keep
 * their code (one of the agents' codes, lib/error-codes.ts) and problems, 404 for unknown tokens
 * and 422 otherwise.
 */
function agentError(error: Partial<ResultError> | undefined): SvcError {
  const message = typeof error?.message === 'string' ? error.message : 'the agent failed';
  const status = typeof error?.status === 'number' ? error.status : 500;
  const code = error?.code;
  if (code === 'command_refused') return apiError('agent_refused', message);
  if (!isAgentErrorCode(code) || status < 400 || status >= 500) {
    return apiError('agent_error', `the agent failed to run the command: ${message}`);
  }
  const problems = Array.isArray(error?.problems) ? error.problems.filter(isProblem) : [];
  return new SvcError(code, message, { status: status === 404 ? 404 : 422, problems });
}

function isProblem(value: unknown): value is Problem {
  const p = value as Partial<Problem> | null;
  return typeof p?.path === 'string' && isProblemCode(p.code) && typeof p.message === 'string';
}
