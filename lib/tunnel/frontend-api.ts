import type { PublishedShare } from './directory.ts';

/**
 * The controller API that frontend replicas in their own processes use (docs/controller.md, "The
 * frontend API"): the share registry as a long-polled snapshot, and one credential check per tunnel
 * connection. Shared by the controller (controller/frontend-api.ts) and the frontend
 * (sidecar/tunnel/remote-directory.ts) so both read the same names.
 */
/** An environment removed from the registry (`svc disable`): its tunnels must close on every replica. */
export interface RevokedEnvironment {
  readonly envZId: string;
  /** The registry revision that removed it. */
  readonly revision: string;
  /** ISO time of the revocation. */
  readonly revokedAt: string;
}

/**
 * One answer of `GET /api/v1/frontend/registry`. `revoked` lists the environments revoked since
 * `revokedSince` (the registry keeps them for a bounded time): a frontend whose previous revision is
 * older than that, or from another controller run (the text before the dot differs), cannot tell
 * what it missed and re-checks the credentials of the tunnels it holds instead.
 */
export interface RegistrySnapshot {
  readonly revision: string;
  readonly shares: readonly PublishedShare[];
  readonly revoked: readonly RevokedEnvironment[];
  /** The oldest revision from which `revoked` is complete. */
  readonly revokedSince: string;
}

/** Revisions are `<run>.<counter>`: a random id of the controller run, and a counter within it. */
export function revisionParts(revision: string): { run: string; counter: number } | undefined {
  const m = /^([a-z0-9]+)\.(\d+)$/.exec(revision);
  return m ? { run: m[1] as string, counter: Number(m[2]) } : undefined;
}

export const FRONTEND_API_PREFIX = '/api/v1/frontend';
export const FRONTEND_REGISTRY_PATH = `${FRONTEND_API_PREFIX}/registry`;
export const FRONTEND_AUTHENTICATE_PATH = `${FRONTEND_API_PREFIX}/authenticate`;
/** The header carrying the frontend replicas' shared credential (`public_frontend.credential_file`). */
export const FRONTEND_TOKEN_HEADER = 'x-frontend-token';
/** Shortest credential accepted: 32 characters, so it cannot be guessed. */
export const MIN_FRONTEND_CREDENTIAL_LENGTH = 32;
/** How long the controller holds a registry poll whose revision has not changed. */
export const REGISTRY_POLL_MS = 25_000;
