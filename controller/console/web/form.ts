import type { IncomingMessage } from 'node:http';
import { SvcError } from '../../../lib/errors.ts';

/** Console forms are small: a token, a target URL, a few patterns. */
export const MAX_FORM_BYTES = 16 * 1024;

/**
 * An `application/x-www-form-urlencoded` body as a map of its fields (the last value of a repeated
 * field). Another media type is 415, a body over `limit` 413, each with a message that says so.
 */
export async function readForm(req: IncomingMessage, limit = MAX_FORM_BYTES): Promise<Map<string, string>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    throw new SvcError('unsupported_media_type', 'the console accepts forms (application/x-www-form-urlencoded) only', {
      status: 415,
    });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.destroy();
      throw new SvcError('body_too_large', `the form exceeds ${limit} bytes`, { status: 413 });
    }
    chunks.push(chunk);
  }
  return new Map(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}
