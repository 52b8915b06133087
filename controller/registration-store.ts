import type { PublishedShare } from '../lib/tunnel/directory.ts';

/** One share published through a tunnel: the share registry's record (controller/share-registry.ts). */
export type RegistrationRecord = PublishedShare & { readonly createdAt: string };

/**
 * A share token freed by an account (unshared, or its environment disabled), kept from every other
 * account until `until`: the quarantine of controller/share-registry.ts. The account that freed it
 * may take it again at any time.
 */
export interface TokenReservation {
  readonly token: string;
  readonly accountId: string;
  /** ISO time the quarantine ends. */
  readonly until: string;
}

/**
 * Where the share registry keeps its records: the embedded controller file store
 * (`ControllerFileStore`) and the Kubernetes store (`KubeControllerStore`, one Secret per token).
 * test/contracts/controller-store.ts runs the same specs against both.
 */
export interface RegistrationStore {
  listRegistrations(): Promise<RegistrationRecord[]>;
  /** Inserts or replaces; fails with `share_token_taken` (409) when another environment owns the token. */
  putRegistration(record: RegistrationRecord): Promise<void>;
  /** Removes the token when `envZId` owns it; false otherwise. */
  deleteRegistration(token: string, envZId: string): Promise<boolean>;
  /** Removes every registration of the environment; returns their tokens. */
  deleteRegistrationsOf(envZId: string): Promise<string[]>;

  listReservations(): Promise<TokenReservation[]>;
  /** Inserts or replaces the reservation of `reservation.token`. */
  putReservation(reservation: TokenReservation): Promise<void>;
  /** Removes the reservation of `token`; false when there was none. */
  deleteReservation(token: string): Promise<boolean>;
}

export function isRegistrationStore(store: object): store is RegistrationStore {
  return 'putRegistration' in store && 'listRegistrations' in store;
}
