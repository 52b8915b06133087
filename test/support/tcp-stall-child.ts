/**
 * One account's two machines in a process of their own, so that a test measures the frontend's
 * memory alone. The owner's stock agent serves the private TCP shares `db1` and `db2`, whose target
 * accepts and never reads, and `quiet`, whose target echoes; the second machine's stock access
 * opens `<perShare>` connections to each of db1 and db2 through the installation and writes into
 * them for as long as they take bytes, and one connection to `quiet` that exchanges one line and
 * then stays silent. Run as
 * `node test/support/tcp-stall-child.ts <frontend port> <owner token> <access token> <perShare>`.
 * Prints `opened` once every connection is up, then every second a JSON line
 * `{"stuckOpen": n, "quietOpen": bool}`; on a stdin line `probe` it sends a line on the quiet
 * connection and prints `{"echo": "<what came back>"}`.
 */
import { createServer, connect, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { startAccessClient } from '../../agent/tunnel/access-client.ts';
import { listenTcp, remoteTcpAccess } from '../../agent/tunnel/tcp-access.ts';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { startTunnel } from '../../agent/tunnel/tunnel-client.ts';
import { createLogger } from '../../lib/logger.ts';
import { ACCESS_PATH, TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';

const [port, ownerToken, accessToken, perShareText] = process.argv.slice(2) as [string, string, string, string];
const perShare = Number(perShareText);
const logger = createLogger('agent', { level: 'silent' });

async function target(onSocket: (socket: Socket) => void): Promise<number> {
  const server = createServer(onSocket);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}
const accepted: Socket[] = [];
const sinkPort = await target((socket) => {
  socket.pause();
  accepted.push(socket);
});
const echoPort = await target((socket) => socket.pipe(socket));
const tcpShare = (targetPort: number): TunnelledShare => ({
  shareMode: 'private',
  backendUrl: new URL('http://127.0.0.1:1'),
  tcpTarget: { host: '127.0.0.1', port: targetPort },
});
const shares = new Map([
  ['db1', tcpShare(sinkPort)],
  ['db2', tcpShare(sinkPort)],
  ['quiet', tcpShare(echoPort)],
]);
const base = `http://127.0.0.1:${port}`;
const owner = startTunnel({
  transport: 'direct',
  url: tunnelUrl(base, TUNNEL_PATH),
  token: ownerToken,
  logger,
  resolve: (token) => shares.get(token),
});
const access = startAccessClient({
  transport: 'direct',
  url: tunnelUrl(base, ACCESS_PATH),
  token: accessToken,
  logger,
});
while (!owner.connected || !access.target()) await new Promise((resolve) => setTimeout(resolve, 50));

async function client(token: string): Promise<Socket> {
  const listener = await listenTcp(
    remoteTcpAccess(() => access.target(), token, logger),
    {
      host: '127.0.0.1',
      port: 0,
    },
  );
  const socket = connect({ host: '127.0.0.1', port: listener.port });
  socket.on('error', () => undefined);
  return socket;
}

const chunk = Buffer.alloc(64 * 1024, 'x');
let stuckOpen = 0;
for (const token of ['db1', 'db2']) {
  for (let i = 0; i < perShare; i++) {
    const socket = await client(token);
    stuckOpen++;
    socket.once('close', () => stuckOpen--);
    const pump = (): void => {
      while (!socket.destroyed && socket.write(chunk));
      if (!socket.destroyed) socket.once('drain', pump);
    };
    socket.once('connect', pump);
  }
}
const quiet = await client('quiet');
let quietOpen = true;
quiet.once('close', () => (quietOpen = false));
quiet.setEncoding('utf8');
const echoed = (): Promise<string> => new Promise((resolve) => quiet.once('data', resolve));
quiet.write('hello\n');
await echoed();
while (accepted.length < 2 * perShare) await new Promise((resolve) => setTimeout(resolve, 50));
console.log('opened');
setInterval(() => console.log(JSON.stringify({ stuckOpen, quietOpen })), 1000);
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line !== 'probe') return;
  void echoed().then((echo) => console.log(JSON.stringify({ echo })));
  quiet.write('still there\n');
});
process.stdin.once('end', () => process.exit(0));
