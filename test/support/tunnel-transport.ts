import type { TunnelTransport } from '../../lib/tunnel/protocol.ts';

let chosen: TunnelTransport = 'direct';

/**
 * The transport the in-process tunnel suites dial with. A suite file runs on `direct`; its
 * `*.websocket.test.ts` twin calls `useTunnelTransport('websocket')` and then imports the suite, so
 * every test of the suite runs on both transports (against an installation that accepts both: the
 * twin is also "an agent that knows only WebSockets against a newer installation").
 */
export function useTunnelTransport(transport: TunnelTransport): void {
  chosen = transport;
}

export function tunnelTransport(): TunnelTransport {
  return chosen;
}
