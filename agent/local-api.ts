import { chmodSync, unlinkSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { SvcError, badInput } from '../lib/errors.ts';
import { createServer } from '../lib/node-http.ts';
import type { Logger } from '../lib/logger.ts';
import { CLI_SHARE_FIELDS } from '../lib/share/surfaces.ts';
import type { Agent } from './agent.ts';
import { CLI_REQUEST_FIELDS } from './requests.ts';

const MAX_BODY = 64 * 1024;

export interface RunningLocalApi {
  readonly socketPath: string;
  close(): Promise<void>;
}

type Handler = (
  match: RegExpExecArray,
  body: Record<string, unknown>,
) => Promise<[number, unknown]> | [number, unknown];

/**
 * The agent's local API, used by the `svc` CLI on the same machine. It listens on a Unix socket in
 * the data directory (folder 0700, socket 0600): only the owning user can connect, so no token is
 * needed, and nothing listens on a TCP port. JSON in, JSON out; errors are `{ error, code }` with the
 * SvcError's status, never a stack.
 */
export async function startLocalApi(agent: Agent, path: string, logger: Logger): Promise<RunningLocalApi> {
  const routes: [string, RegExp, Handler][] = [
    ['GET', /^\/v1\/status$/, () => [200, agent.status()]],
    ['POST', /^\/v1\/shares$/, async (_m, body) => [201, await agent.share(body, CLI_SHARE_FIELDS)]],
    ['DELETE', /^\/v1\/shares\/([a-z0-9-]{1,63})$/, async (m) => [200, await agent.unshare(m[1] as string)]],
    [
      'POST',
      /^\/v1\/shares\/([a-z0-9-]{1,63})\/http-healthcheck$/,
      async (m, body) => [
        200,
        await agent.healthCheck(
          {
            shareToken: m[1] as string,
            verb: stringField(body, 'verb'),
            path: stringField(body, 'path'),
            expectedStatus: body.expectedStatus,
            timeout: body.timeout,
            followRedirects: body.followRedirects === true,
          },
          CLI_REQUEST_FIELDS,
        ),
      ],
    ],
    [
      'POST',
      /^\/v1\/accesses$/,
      async (_m, body) => [
        201,
        await agent.access(
          stringField(body, 'shareToken'),
          typeof body.bind === 'string' ? body.bind : undefined,
          CLI_REQUEST_FIELDS,
        ),
      ],
    ],
    ['DELETE', /^\/v1\/accesses\/([a-z0-9-]{1,63})$/, async (m) => [200, (await agent.unaccess(m[1] as string)) ?? {}]],
  ];

  const server = createServer((req, res) => {
    const respond = (status: number, payload: unknown) => {
      const text = JSON.stringify(payload);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    const url = req.url ?? '/';
    const route = routes.find(([method, re]) => method === req.method && re.test(url));
    if (!route) return respond(404, { error: `no route ${req.method} ${url}`, code: 'not_found' });
    const match = route[1].exec(url) as RegExpExecArray;
    readJson(req)
      .then((body) => route[2](match, body))
      .then(([status, payload]) => respond(status, payload))
      .catch((err: unknown) => {
        if (err instanceof SvcError && err.status < 500)
          return respond(err.status, { error: err.message, code: err.code });
        logger.error({ err, route: `${req.method} ${url}` }, 'local API request failed');
        respond(500, { error: err instanceof SvcError ? err.message : 'internal error', code: 'internal' });
      });
  });

  await removeStaleSocket(path);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new SvcError('bind_failed', `cannot listen on ${path}: ${err.message}`, { cause: err })),
    );
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  return {
    socketPath: path,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function stringField(body: Record<string, unknown>, key: string): string {
  const value = body[key];
  if (typeof value !== 'string' || value === '') throw badInput(`${key}: required`);
  return value;
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(badInput('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size === 0) return resolve({});
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
        resolve(parsed as Record<string, unknown>);
      } catch {
        reject(badInput('request body must be a JSON object'));
      }
    });
  });
}

/** Fails when a running `svc serve` already answers on this data directory's socket. */
export async function assertNotRunning(path: string): Promise<void> {
  const alive = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
  if (alive) {
    throw new SvcError(
      'already_running',
      `another svc serve is already running with this data directory (socket ${path})`,
      {
        status: 409,
      },
    );
  }
}

/** A socket file left by a crashed process is removed; one that answers means a second instance. */
async function removeStaleSocket(path: string): Promise<void> {
  await assertNotRunning(path);
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
