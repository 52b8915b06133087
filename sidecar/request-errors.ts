import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import { sendPage } from './pages.ts';

/** A request handler that returns a promise only when it still has work to do. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | undefined;

/**
 * `handle` with its failures answered: an error it throws or rejects with is logged and answered
 * with a 500 page that names nothing of the error. Most requests take no promise on the way.
 */
export function answeringErrors(
  handle: RequestHandler,
  log: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  const failed = (res: ServerResponse, err: unknown): void => {
    log.error({ err: errorText(err) }, 'request failed');
    sendPage(res, 500, 'Internal error', 'The frontend could not handle this request.');
  };
  return (req, res) => {
    let pending: Promise<void> | undefined;
    try {
      pending = handle(req, res);
    } catch (err) {
      failed(res, err);
      return;
    }
    pending?.catch((err: unknown) => failed(res, err));
  };
}
