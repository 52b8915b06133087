/** test/tunnel/fast-path.test.ts with the agent on the WebSocket transport (test/support/tunnel-transport.ts). */
import { useTunnelTransport } from '../support/tunnel-transport.ts';

useTunnelTransport('websocket');
await import('./fast-path.test.ts');
