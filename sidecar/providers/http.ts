import { ProviderError } from './types.ts';
import { errorText } from '../../lib/errors.ts';

const TIMEOUT_MS = 10_000;
const MAX_BODY_BYTES = 1 << 20;

/**
 * One HTTP exchange with a provider: bounded in time and size, failures translated into
 * ProviderError (the message never includes request bodies, which carry secrets).
 */
export async function providerRequest(
  provider: string,
  what: string,
  url: URL,
  init: { method: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; json: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    throw new ProviderError(provider, `${what} failed: ${errorText(err)}`, err);
  }
  const text = await readLimited(response, provider, what);
  let json: unknown;
  if (text.length > 0) {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: response.status, json };
}

async function readLimited(response: Response, provider: string, what: string): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES)
      throw new ProviderError(provider, `${what}: response larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function form(values: Record<string, string>): string {
  return new URLSearchParams(values).toString();
}

export function oauthErrorText(json: unknown): string {
  if (json && typeof json === 'object' && 'error' in json) {
    const { error, error_description: description } = json as { error: unknown; error_description?: unknown };
    return `${String(error)}${typeof description === 'string' ? `: ${description}` : ''}`;
  }
  return 'unexpected response';
}
