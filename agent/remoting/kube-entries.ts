import type { AccessEntry, ShareEntry } from '../agent.ts';
import type { Access, Share } from '../../lib/kube/resources.ts';
import { deriveToken } from '../../lib/token.ts';
import { DEFAULT_BIND_PORT } from './kube-specs.ts';

/** The token a Share is served under: spec.token, else the operator's status, else its derivation from the uid. */
export function shareToken(share: Share): string {
  return share.spec?.token ?? share.status?.token ?? deriveToken(share.metadata.uid ?? '');
}

/** The token an Access is reached by: the operator's status, else its derivation from the uid. */
export function accessToken(access: Access): string {
  return access.status?.frontendToken ?? deriveToken(access.metadata.uid ?? '');
}

/** A Share as a status entry (seed: "Share entry (in the status response)"). */
export function shareEntry(share: Share): ShareEntry {
  return {
    token: shareToken(share),
    shareMode: share.spec?.shareMode ?? 'public',
    backendMode: share.spec?.backendMode ?? 'proxy',
    backendEndpoint: share.spec?.target ?? '',
    frontendEndpoints: share.status?.frontendEndpoints ?? [],
  };
}

/** An Access as a status entry: it listens on its Service's port; `endpoint` is its in-cluster URL. */
export function accessEntry(access: Access): AccessEntry {
  return {
    token: accessToken(access),
    shareToken: access.spec?.shareToken ?? '',
    bindAddress: `0.0.0.0:${access.spec?.bindPort ?? DEFAULT_BIND_PORT}`,
    endpoint: access.status?.endpoint ?? '',
  };
}
