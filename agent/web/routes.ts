import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SseHub } from '../../lib/web/sse.ts';
import type { StartSecret } from '../../lib/web/session.ts';
import type { AgentPageOptions } from './server.ts';

/** One request the page's router matched. */
export interface RouteCall {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly match: RegExpExecArray;
  /** The session id (the page checked the cookie before routing). */
  readonly session: string;
}

/** A page or API route of the agent's page. */
export interface Route {
  readonly method: 'GET' | 'POST';
  readonly path: RegExp;
  handle(call: RouteCall): void | Promise<void>;
}

/** What routes are built from: the page's options, its event hub and its per-start secret. */
export interface PageContext extends AgentPageOptions {
  readonly hub: SseHub;
  readonly secret: StartSecret;
}

/** A share or access token in a route's path. */
export const TOKEN = '([a-z0-9-]{1,63})';
