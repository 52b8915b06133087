import type { IncomingMessage } from 'node:http';
import { readForm } from '../../lib/web/body.ts';

/** A posted form (the kit's reader, lib/web/body.ts) as its text fields; anything else is dropped. */
export async function readFields(req: IncomingMessage): Promise<Map<string, string>> {
  const body = await readForm(req);
  return new Map(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
