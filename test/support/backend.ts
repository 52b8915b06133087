import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
}

export interface EchoBackend {
  readonly url: URL;
  readonly seen: SeenRequest[];
  close(): Promise<void>;
}

/**
 * A real HTTP backend for tests: records every request it receives and answers with the request's
 * headers as JSON; websocket connections get their messages echoed with the upgrade's identity headers.
 */
export async function startEchoBackend(): Promise<EchoBackend> {
  const seen: SeenRequest[] = [];
  const server: Server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders });
    const body = JSON.stringify({ url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'backend-cookie=1; Path=/' });
    res.end(body);
  });
  const wss = new WebSocketServer({ server });
  wss.on('connection', (socket, req) => {
    seen.push({ method: 'UPGRADE', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders });
    socket.on('message', (data: Buffer) =>
      socket.send(`echo:${data.toString('utf8')}:${String(req.headers['svc-auth-email'] ?? '')}`),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}`),
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
