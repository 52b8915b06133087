import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../lib/logger.ts';
import {
  FRONTEND_API_PREFIX,
  FRONTEND_AUTHENTICATE_PATH,
  FRONTEND_REGISTRY_PATH,
  FRONTEND_REPORT_PATH,
  FRONTEND_TOKEN_HEADER,
  MAX_REPORT_BYTES,
  REGISTRY_POLL_MS,
  type ReplicaReport,
} from '../lib/tunnel/frontend-api.ts';
import { apiError } from './errors.ts';
import type { ReplicaReports } from './replica-reports.ts';
import type { ShareRegistry } from './share-registry.ts';

export interface FrontendApiOptions {
  readonly registry: ShareRegistry;
  /** The frontend replicas' shared credential (`public_frontend.credential_file`). */
  readonly credential: string;
  readonly logger: Logger;
  /** Where the replicas' reports go (presence and traffic for the console). */
  readonly reports: ReplicaReports;
  /** How long an unchanged registry poll is held (tests shorten it). */
  readonly pollMs?: number;
}

/** The frontend API's operations (paths relative to `/api/v1`, as in openapi.yaml) and their method. */
export const FRONTEND_OPERATIONS = {
  [FRONTEND_REGISTRY_PATH.slice('/api/v1'.length)]: 'GET',
  [FRONTEND_AUTHENTICATE_PATH.slice('/api/v1'.length)]: 'POST',
  [FRONTEND_REPORT_PATH.slice('/api/v1'.length)]: 'POST',
} as const;

/**
 * What the API server hands a frontend request: a parsed body for POST, checked against openapi.yaml;
 * `maxBytes` in place of the API's body limit.
 */
export type ReadBody = (maxBytes?: number) => Promise<Record<string, unknown>>;

/** True for paths of the frontend API (`/api/v1/frontend/...`). */
export function isFrontendPath(path: string): boolean {
  return path.startsWith(`${FRONTEND_API_PREFIX}/`);
}

/** The registry long poll (`GET /api/v1/frontend/registry?after=`), which each frontend replica repeats. */
export function isRegistryPoll(method: string | undefined, path: string): boolean {
  return method === 'GET' && path === FRONTEND_REGISTRY_PATH;
}

/**
 * The frontend-only API (docs/controller.md, "The frontend API"): frontend replicas in their own
 * processes read the share registry and check tunnel credentials here. Every call carries the shared
 * credential in `X-FRONTEND-TOKEN`, compared in constant time; a refusal is logged with the peer
 * address, never the presented value. Without `public_frontend` the server answers 501 before this.
 */
export class FrontendApi {
  private readonly options: FrontendApiOptions;
  private readonly credentialHash: Buffer;

  constructor(options: FrontendApiOptions) {
    this.options = options;
    this.credentialHash = digest(options.credential);
  }

  /** The response body of one frontend request; errors are thrown as API errors. */
  async handle(req: IncomingMessage, res: ServerResponse, path: string, readBody: ReadBody): Promise<unknown> {
    const expected = FRONTEND_OPERATIONS[path.slice('/api/v1'.length)];
    if (!expected) throw apiError('not_found', `no API operation at ${path}`);
    if (req.method !== expected) {
      res.setHeader('allow', expected);
      throw apiError('method_not_allowed', `${path} accepts ${expected} only`);
    }
    this.checkCredential(req, path);
    if (expected === 'GET') return this.registry(req, res);
    if (path === FRONTEND_REPORT_PATH)
      return this.report((await readBody(MAX_REPORT_BYTES)) as unknown as ReplicaReport);
    const body = await readBody();
    const identity = await this.options.registry.authenticate(String(body.environmentToken));
    if (!identity) throw apiError('environment_not_found', 'the environment token is not valid');
    return { ...identity, ticket: this.options.reports.ticket(identity.envZId) };
  }

  /** A replica's report: applied whole or refused whole (nothing changes on a refusal). */
  private report(report: ReplicaReport): unknown {
    try {
      return this.options.reports.apply(report);
    } catch (err) {
      this.options.logger.warn(
        { replica: report.replica, environments: report.environments.length, err: (err as Error).message },
        'frontend report refused',
      );
      throw err;
    }
  }

  private checkCredential(req: IncomingMessage, path: string): void {
    const header = req.headers[FRONTEND_TOKEN_HEADER];
    const given = typeof header === 'string' ? digest(header.trim()) : undefined;
    if (given && timingSafeEqual(given, this.credentialHash)) return;
    this.options.logger.warn(
      { peer: req.socket.remoteAddress, path, presented: given !== undefined },
      'frontend API refused: X-FRONTEND-TOKEN missing or wrong',
    );
    throw apiError('unauthorized', 'X-FRONTEND-TOKEN must hold the frontend credential');
  }

  /** The long poll: answers when the revision differs from `after`, or unchanged after the poll time. */
  private async registry(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
    const after = new URL(req.url ?? '/', 'http://x').searchParams.get('after') ?? undefined;
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    const { registry } = this.options;
    await registry.revisions.changed(after, this.options.pollMs ?? REGISTRY_POLL_MS, gone.signal);
    return registry.snapshot();
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
