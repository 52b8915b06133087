/**
 * The share tokens an installation keeps for itself: a share is served at `<token>.<domain>`, so a
 * token equal to the first label of one of the installation's own hosts under the share domain
 * (the auth endpoint, the public frontend's endpoint, the controller's API) would give a tenant's
 * share that host. Token → the host it would take. Hosts outside the domain, the domain itself and
 * hosts more than one label below it reserve nothing (a token is one label).
 */
export function reservedTokens(hosts: readonly (string | undefined)[], domain: string): Map<string, string> {
  const reserved = new Map<string, string>();
  const suffix = `.${domain.toLowerCase().replace(/^\./, '')}`;
  for (const given of hosts) {
    const host = given?.toLowerCase().replace(/\.$/, '');
    if (!host?.endsWith(suffix)) continue;
    const label = host.slice(0, -suffix.length);
    if (label && !label.includes('.')) reserved.set(label, host);
  }
  return reserved;
}

/** The problem text for a reserved token. */
export function reservedTokenMessage(token: string, host: string): string {
  return `${JSON.stringify(token)} is reserved: ${host} is a host of the installation itself`;
}
