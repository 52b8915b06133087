import type { BackendMode, ShareMode } from '../lib/share/spec.ts';

/** A share as the agent keeps it: enough to re-create its backend and frontend route after a restart. */
export interface ShareRecord {
  readonly token: string;
  readonly shareMode: ShareMode;
  readonly backendMode: BackendMode;
  /** proxy: absolute http(s) URL; web: absolute folder path; tcp: `host:port`. */
  readonly target: string;
  readonly oauth?: {
    readonly provider: string;
    readonly emailAddressPatterns: readonly string[];
    readonly checkInterval: string;
  };
  /** web only: directory listing opted in. */
  readonly webListing?: boolean;
  readonly createdAt: string;
}

/** A private access: a local listener forwarding to a private share's backend. */
export interface AccessRecord {
  readonly token: string;
  readonly shareToken: string;
  /** `ip:port` actually bound (a requested port 0 is recorded as the port the system chose). */
  readonly bindAddress: string;
  /** The share is on another machine of the account, reached through the installation's tunnel. */
  readonly remote?: boolean;
  /** `tcp`: a TCP listener relaying connections (the share is a TCP share); absent for HTTP. */
  readonly backendMode?: 'tcp';
  readonly createdAt: string;
}

/**
 * Where the agent keeps its shares and accesses. The single-machine service uses the file store
 * under the data directory (agent/file-store.ts); a Kubernetes-backed store implements the same
 * interface, and `test/contracts/agent-store.ts` holds the specs every implementation must pass.
 */
export interface AgentStore {
  listShares(): Promise<ShareRecord[]>;
  getShare(token: string): Promise<ShareRecord | undefined>;
  /** Inserts; fails with code `conflict` when the token exists. */
  createShare(share: ShareRecord): Promise<void>;
  /** Removes the share and every access to it; false when it did not exist. */
  deleteShare(token: string): Promise<boolean>;
  listAccesses(): Promise<AccessRecord[]>;
  createAccess(access: AccessRecord): Promise<void>;
  deleteAccess(token: string): Promise<boolean>;
}
