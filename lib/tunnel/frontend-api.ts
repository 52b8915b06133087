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

export const FRONTEND_REPORT_PATH = `${FRONTEND_API_PREFIX}/report`;
/** How often a replica reports its tunnels and traffic to the controller. */
export const REPORT_INTERVAL_MS = 5_000;
/** Largest report body the controller reads (the API's other bodies keep `controller.max_body_bytes`). */
export const MAX_REPORT_BYTES = 1024 * 1024;
/** Environments in one report: a replica holding more reports those it saw last (docs/controller.md). */
export const MAX_REPORT_ENVIRONMENTS = 2_000;
/** Traffic entries (share, minute) in one report; the rest wait for the next report. */
export const MAX_REPORT_TRAFFIC = 5_000;

/** One environment whose tunnel a replica holds, with the proof the controller gave it for that environment. */
export interface ReportedEnvironment {
  readonly envZId: string;
  /** From `/frontend/authenticate` for this environment's token in this controller run. */
  readonly ticket: string;
  readonly tunnels: number;
  readonly agentVersion?: string;
}

/** One share's counts in one minute on one replica since its previous acknowledged report. */
export interface ReportedTraffic {
  readonly token: string;
  /** Start of the minute, epoch ms. */
  readonly minute: number;
  readonly requests: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly errors: number;
}

/**
 * `POST /api/v1/frontend/report`: a replica's tunnels (the whole set, replacing the previous one) and
 * its traffic counts since the last acknowledged report. `run` (random per replica start) and `seq`
 * make the traffic idempotent: a report is resent unchanged until acknowledged, and the controller
 * adds the traffic of a (run, seq) once.
 */
export interface ReplicaReport {
  readonly replica: string;
  readonly run: string;
  readonly seq: number;
  readonly environments: readonly ReportedEnvironment[];
  readonly traffic: readonly ReportedTraffic[];
  /** The replica is shutting down: forget it now rather than when it ages out. */
  readonly leaving?: boolean;
}
