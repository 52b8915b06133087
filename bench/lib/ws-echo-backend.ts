import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';

export interface WsEchoBackend {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  close(): Promise<void>;
}

/**
 * A WebSocket echo server on 127.0.0.1 (any path): every message goes back as it came, text or
 * binary. Plain HTTP requests get a small 200, so a share can be checked before the run. Meant to
 * run in its own process (`startModule`), as the other benchmark backends.
 */
export async function startWsEchoBackend(): Promise<WsEchoBackend> {
  const server = createServer((_req, res) => res.end('websocket echo backend\n'));
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (ws) => {
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: process.pid,
    close: async () => {
      for (const client of wss.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
