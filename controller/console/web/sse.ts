import type { IncomingMessage, ServerResponse } from 'node:http';
import { SECURITY_HEADERS } from './headers.ts';

/**
 * A server-sent event stream (text/event-stream): `send` writes one event, a comment every 15 s
 * keeps proxies from closing an idle stream, and `onClose` runs once when the browser leaves.
 */
export function openEventStream(
  req: IncomingMessage,
  res: ServerResponse,
  onClose: () => void,
): { send(event: string, data: unknown): void } {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': 'text/event-stream; charset=utf-8',
    'x-accel-buffering': 'no',
  });
  res.write(': stream open\n\n');
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  keepAlive.unref();
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(keepAlive);
    onClose();
  };
  req.on('close', close);
  res.on('close', close);
  return {
    send(event, data) {
      if (!closed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
  };
}
