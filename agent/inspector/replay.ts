import type { IncomingMessage, RequestOptions } from 'node:http';
import { SvcError, badInput } from '../../lib/errors.ts';
import { isHopByHopRequestHeader, joinPath, upstreamHost, upstreamPort } from '../../lib/http-pipe.ts';
import { request } from '../../lib/node-http.ts';
import { BodyCapture, REDACTED, redactHeaders, type CapturedBody, type RecordedExchange } from './record.ts';

/** What the page may change before a request is sent again. */
export interface ReplayEdits {
  readonly method?: string;
  readonly path?: string;
  /** Header lines `Name: value`, replacing the recorded headers when given. */
  readonly headers?: string;
  /** The body as text, replacing the recorded one when given. */
  readonly body?: string;
}

/** The backend's answer to a replayed request. */
export interface ReplayResult {
  readonly status: number;
  readonly durationMs: number;
  readonly responseHeaders: [string, string][];
  readonly responseBody: CapturedBody;
}

const METHOD = /^[A-Z]{1,16}$/;
/** What Node sends as a request target: visible ASCII, from the root. */
const REQUEST_PATH = /^\/[\x21-\x7e]*$/;
/** A header value Node sends: no control characters but tab. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const REPLAY_TIMEOUT_MS = 30_000;

/**
 * Sends a recorded request to the share's backend again (not through the frontend: no login, the
 * visitor's identity headers as recorded), optionally edited, and records the answer with the same
 * redaction and body limit. Redacted headers are left out; a recorded body cut at the limit is not
 * resent unless the edit gives a whole one.
 */
export async function replay(
  target: URL,
  record: RecordedExchange,
  edits: ReplayEdits,
  bodyLimit: number,
  ownCookie: string | undefined,
): Promise<ReplayResult> {
  const method = edits.method?.trim().toUpperCase() || record.method;
  if (!METHOD.test(method)) throw badInput(`method: must be an HTTP method, got ${JSON.stringify(method)}`);
  const path = edits.path?.trim() || record.path;
  if (!REQUEST_PATH.test(path))
    throw badInput(`path: must start with / and hold only visible ASCII (no spaces), got ${JSON.stringify(path)}`);
  if (edits.body === undefined && record.requestBody.truncated)
    throw badInput(`body: the recorded body was cut at ${bodyLimit} bytes; give the whole body to replay it`);
  const body = edits.body !== undefined ? Buffer.from(edits.body) : record.requestBody.kept;
  const headers = edits.headers !== undefined ? parseHeaderLines(edits.headers) : record.requestHeaders;
  const sent: string[] = ['host', target.host];
  for (const [name, value] of headers) {
    if (value === REDACTED || name === 'host' || name === 'content-length' || isHopByHopRequestHeader(name)) continue;
    if (name === 'transfer-encoding') continue;
    sent.push(name, value);
  }
  if (body.length > 0 || !['GET', 'HEAD'].includes(method)) sent.push('content-length', String(body.length));
  const options: RequestOptions = {
    host: upstreamHost(target),
    port: upstreamPort(target),
    method,
    path: joinPath(target.pathname, path),
    headers: sent,
    timeout: REPLAY_TIMEOUT_MS,
  };
  const t0 = performance.now();
  const res = await send(target, options, body);
  const capture = new BodyCapture(bodyLimit);
  for await (const chunk of res as AsyncIterable<Buffer>) capture.add(chunk);
  const responseHeaders = redactHeaders(res.rawHeaders, ownCookie);
  return {
    status: res.statusCode ?? 0,
    durationMs: Math.round((performance.now() - t0) * 10) / 10,
    responseHeaders,
    responseBody: capture.finish(responseHeaders),
  };
}

function send(target: URL, options: RequestOptions, body: Buffer): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const make = target.protocol === 'https:' ? process.getBuiltinModule('node:https').request : request;
    const req = make(options, resolve);
    req.on('timeout', () => req.destroy(new Error(`the backend did not answer in ${REPLAY_TIMEOUT_MS / 1000} s`)));
    req.on('error', (err) => reject(new SvcError('agent_error', `replay failed: ${err.message}`, { status: 502 })));
    req.end(body);
  });
}

/** `Name: value` lines as header pairs; a line without a colon is refused, naming its number. */
export function parseHeaderLines(text: string): [string, string][] {
  const out: [string, string][] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '') return;
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (colon <= 0 || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name))
      throw badInput(`headers: line ${i + 1} is not "Name: value"`);
    const value = line.slice(colon + 1).trim();
    if (!HEADER_VALUE.test(value)) throw badInput(`headers: line ${i + 1} holds a control character`);
    out.push([name, value]);
  });
  return out;
}
