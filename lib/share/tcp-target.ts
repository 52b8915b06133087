/** Where a TCP share's connections go: a host name or IP address and a port. */
export interface TcpTarget {
  readonly host: string;
  readonly port: number;
}

const HOST_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)):(\d{1,5})$/;

/**
 * The one parser of a TCP share's target, `host:port` (`[::1]:5432` for IPv6): a host name or IP
 * address and a port from 1 to 65535; no scheme, no path, no empty host. The sharing agent dials
 * exactly this and nothing a stream names.
 */
export function parseTcpTarget(text: string): TcpTarget | undefined {
  const match = HOST_PORT.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: match[1] ?? (match[2] as string), port };
}

/** Why `text` is not a TCP target; shown after the field path or argument that held it. */
export function tcpTargetProblem(text: unknown): string {
  return `must be host:port for backend mode tcp (for example 127.0.0.1:5432), got ${JSON.stringify(text)}`;
}
