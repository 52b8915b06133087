import type { BackendMode } from '../share/spec.ts';

/**
 * What the installation's frontend needs to know about shares published through tunnels, without
 * asking any agent: the share registry kept by the controller (controller/share-registry.ts). The
 * frontend looks shares up on every request, so lookups are synchronous reads of a view the
 * directory keeps current; credentials are checked asynchronously, once per tunnel connection.
 *
 * In one process (the installation on one VM, serve/installation.ts) the controller's registry is
 * handed to the frontend directly. A frontend in its own process (Kubernetes replicas) implements the
 * same interface over the controller's API.
 */
export interface ShareDirectory {
  /** The registered share with this token, or undefined. */
  lookup(token: string): PublishedShare | undefined;
  /** The environment an environment token belongs to; undefined for a forged, foreign or revoked one. */
  authenticate(environmentToken: string): Promise<EnvironmentIdentity | undefined>;
  /**
   * Called with an environment whose tunnels must close at once (disabled, or its token replaced).
   * Returns a function that removes the listener.
   */
  onRevoked(listener: (envZId: string) => void): () => void;
}

/** An environment, as the credential of its tunnel proves it. */
export interface EnvironmentIdentity {
  readonly envZId: string;
  readonly accountId: string;
}

/** One entry of the share registry: which environment serves the token, and how it is protected. */
export interface PublishedShare {
  readonly token: string;
  /**
   * Random id minted when the token is registered for a share (kept while that share is updated),
   * so sessions made for this share are refused by any later share with the same token.
   */
  readonly instance: string;
  readonly envZId: string;
  readonly accountId: string;
  readonly shareMode: 'public' | 'private';
  readonly backendMode: BackendMode;
  readonly oauth?: {
    readonly provider: string;
    readonly emailAddressPatterns: readonly string[];
    /** Duration text, e.g. `3h`. */
    readonly checkInterval: string;
  };
}
