/**
 * A stock agent (agent/tunnel/tunnel-client.ts) and its backend (tunnel-backend.ts) in a process of
 * their own, so that a test measures the memory of the frontend alone. Every share it is given is a
 * proxy share of the backend, public unless named `<token>:private`. Run as
 * `node test/support/stock-agent-child.ts <frontend port> <environment token> <share,share,...>`;
 * prints `connected` once its tunnel is up, and ends with its stdin.
 */
import { startTunnel } from '../../agent/tunnel/tunnel-client.ts';
import type { TunnelledShare } from '../../agent/tunnel/serve-stream.ts';
import { createLogger } from '../../lib/logger.ts';
import { TUNNEL_PATH, tunnelUrl } from '../../lib/tunnel/protocol.ts';
import { startTunnelBackend } from './tunnel-backend.ts';

const [port, token, names] = process.argv.slice(2) as [string, string, string];
const backend = await startTunnelBackend();
const shares = new Map<string, TunnelledShare>(
  names.split(',').map((name) => {
    const [token, mode] = name.split(':') as [string, string | undefined];
    return [token, { shareMode: mode === 'private' ? 'private' : 'public', backendUrl: new URL(backend.url) }];
  }),
);
const tunnel = startTunnel({
  transport: 'direct',
  url: tunnelUrl(`http://127.0.0.1:${port}`, TUNNEL_PATH),
  token,
  logger: createLogger('agent', { level: 'silent' }),
  resolve: (name) => shares.get(name),
});
const timer = setInterval(() => {
  if (!tunnel.connected) return;
  clearInterval(timer);
  console.log('connected');
}, 20);
process.stdin.resume();
process.stdin.once('end', () => process.exit(0));
