import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export type IdentityHeaderPolicy = 'strip' | 'pass';

/** A share backend: the handler behind one listener (the agent backend process, a web share, an access). */
export interface BackendHandler {
  request(req: IncomingMessage, res: ServerResponse): void;
  upgrade?(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  close(): void;
}
