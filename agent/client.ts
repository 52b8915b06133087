import { request } from '../lib/node-http.ts';
import { isAgentErrorCode } from '../lib/error-codes.ts';
import { SvcError } from '../lib/errors.ts';
import { socketPath } from '../lib/data-dir.ts';

/**
 * The CLI side of the local API: JSON requests over the data directory's Unix socket. An API error
 * becomes an SvcError with the agent's message; no agent running becomes a hint to start one.
 */
export class LocalApiClient {
  readonly socketPath: string;

  constructor(dataDir: string) {
    this.socketPath = socketPath(dataDir);
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path);
  }

  private call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    return new Promise<T>((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          path,
          method,
          headers: text ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            let payload: unknown;
            try {
              payload = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              return reject(
                new SvcError('bad_response', `the local agent sent an unreadable answer (${res.statusCode})`),
              );
            }
            if ((res.statusCode ?? 500) >= 400) {
              const p = payload as { error?: string; code?: unknown };
              const code = isAgentErrorCode(p.code) ? p.code : 'agent_error';
              return reject(new SvcError(code, p.error ?? 'request failed', { status: res.statusCode ?? 500 }));
            }
            resolve(payload as T);
          });
          res.on('error', reject);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
          reject(
            new SvcError(
              'agent_not_running',
              `no local agent at ${this.socketPath}: start one with \`svc serve\` (or point --data-dir / SVC_DATA_DIR at its data directory)`,
              { status: 503, cause: err },
            ),
          );
        } else
          reject(
            new SvcError('agent_unreachable', `cannot reach the local agent at ${this.socketPath}: ${err.message}`, {
              cause: err,
            }),
          );
      });
      req.end(text);
    });
  }
}
