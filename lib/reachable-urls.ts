import { networkInterfaces, type NetworkInterfaceInfo } from 'node:os';
import { formatAddress, type ListenAddress } from './listen.ts';
import { isLoopbackHost } from './loopback.ts';

/** Interface addresses by interface name, as `os.networkInterfaces()` returns them. */
export type Interfaces = NodeJS.Dict<NetworkInterfaceInfo[]>;

/**
 * The `http://` URLs (ending in `path`) at which other machines can reach a listener bound to
 * `listen` on `port`. An unspecified host (`0.0.0.0`, `::`) means every address of this machine, so
 * each non-loopback interface address is listed (IPv4 only for `0.0.0.0`; link-local IPv6 left out,
 * it needs a zone); a loopback host gives none; any other host is the one URL.
 */
export function reachableUrls(
  listen: ListenAddress,
  port: number,
  path: string,
  interfaces: Interfaces = networkInterfaces(),
): string[] {
  const url = (host: string): string => `http://${formatAddress({ host, port })}${path}`;
  if (listen.host !== '0.0.0.0' && listen.host !== '::') return isLoopbackHost(listen.host) ? [] : [url(listen.host)];
  const hosts = Object.values(interfaces)
    .flatMap((infos) => infos ?? [])
    .filter((info) => !info.internal && (info.family === 'IPv4' || listen.host === '::'))
    .filter((info) => !info.address.toLowerCase().startsWith('fe80:'))
    .map((info) => info.address);
  return [...new Set(hosts)].map(url);
}

/**
 * The banner line that tells where agents on other machines find the API listening on `listen`:
 * the reachable URLs, or why there is none.
 */
export function agentsLine(listen: ListenAddress, port: number, path: string, interfaces?: Interfaces): string {
  const urls = reachableUrls(listen, port, path, interfaces);
  if (urls.length > 0) return `  agents:    ${urls.join(', ')} (or the name your proxy gives it)`;
  if (listen.host === '0.0.0.0' || listen.host === '::') {
    return `  agents:    this machine's address, port ${port} (${listen.host}: every interface; none but loopback found)`;
  }
  return `  agents:    none from other machines: ${listen.host} is this machine only (set controller.listen to reach it)`;
}
