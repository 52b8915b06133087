/** test/tunnel/backpressure.test.ts with the agents on the WebSocket transport (test/support/tunnel-transport.ts). */
import { useTunnelTransport } from '../support/tunnel-transport.ts';

useTunnelTransport('websocket');
await import('./backpressure.test.ts');
