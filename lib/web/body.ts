import type { IncomingMessage } from 'node:http';
import { badInput } from '../errors.ts';

/** Largest form or JSON body a page accepts. */
export const MAX_FORM_BYTES = 64 * 1024;

/**
 * The body of a page's state-changing request as an object: JSON (what kit.js sends) or an
 * urlencoded form (a form posted without script). Refuses bodies over `limit` bytes and JSON that
 * is not an object, with a clear 400.
 */
export async function readForm(req: IncomingMessage, limit = MAX_FORM_BYTES): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw badInput(`request body over ${limit} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  if ((req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded'))
    return Object.fromEntries(new URLSearchParams(text));
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badInput('request body must be JSON or a form');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw badInput('request body must be a JSON object');
  return parsed as Record<string, unknown>;
}
