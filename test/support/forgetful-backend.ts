import { createServer, type AddressInfo, type Server } from 'node:net';

/**
 * A backend that closes a connection, unanswered, when a second request arrives on it: what a
 * kept-alive connection closed by the backend just as the frontend reused it looks like. Each
 * first request is answered `answered!`.
 */
export function startForgetfulBackend(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    let requests = 0;
    socket.on('data', (chunk: Buffer) => {
      requests += chunk.toString('latin1').split('\r\n\r\n').length - 1;
      if (requests > 1) socket.destroy();
      else socket.write('HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nanswered!');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })),
  );
}
