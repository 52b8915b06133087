/** An account: the owner of environments. Its token is stored only as a SHA-256 hash. */
export interface AccountRecord {
  /** The id part of the account token (`svca_<id>_<secret>`). */
  readonly id: string;
  readonly email: string;
  readonly tokenHash: string;
  readonly createdAt: string;
}

/** An environment: an agent installation enabled for an account (`svc enable`). */
export interface EnvironmentRecord {
  readonly envZId: string;
  readonly accountId: string;
  readonly description: string;
  readonly host: string;
  /** SHA-256 of the environment token (tunnel credential); absent for environments enabled before tunnels. */
  readonly tokenHash?: string;
  readonly createdAt: string;
}

/** Remote control of one environment's agent by this controller (`svc agent enroll`). */
export interface EnrollmentRecord {
  /** The id part of the enrollment token (`svce_<id>_<secret>`); safe to log. */
  readonly id: string;
  readonly envZId: string;
  readonly tokenHash: string;
  /** z_id of the controller identity the agent pinned. */
  readonly controllerZId: string;
  readonly createdAt: string;
}

/**
 * Where the controller keeps accounts, environments and enrollments. The single-machine controller
 * uses `ControllerFileStore` (controller/file-store.ts); the cluster controller keeps them as
 * Kubernetes objects in its namespace behind this same interface. `runStoreContract`
 * (test/contracts/controller-store.ts) holds the behaviour every implementation must show.
 *
 * Errors are SvcErrors: `conflict` (409) on a duplicate, `not_found` (404) for a missing parent.
 * Lookups of a missing record resolve to undefined, never throw.
 */
export interface ControllerStore {
  /** Fails with `conflict` when the id or (case-insensitively) the email exists. */
  createAccount(account: AccountRecord): Promise<void>;
  getAccount(id: string): Promise<AccountRecord | undefined>;
  findAccountByEmail(email: string): Promise<AccountRecord | undefined>;
  /** Every account (the console's admin view), oldest first. */
  listAccounts(): Promise<AccountRecord[]>;

  /** Fails with `not_found` when the account does not exist, `conflict` when the envZId does. */
  createEnvironment(environment: EnvironmentRecord): Promise<void>;
  getEnvironment(envZId: string): Promise<EnvironmentRecord | undefined>;
  listEnvironments(accountId: string): Promise<EnvironmentRecord[]>;
  /** Removes the environment and its enrollment; false when it did not exist. */
  deleteEnvironment(envZId: string): Promise<boolean>;

  /** Fails with `not_found` for an unknown environment, `conflict` when it is already enrolled or the id exists. */
  createEnrollment(enrollment: EnrollmentRecord): Promise<void>;
  getEnrollment(id: string): Promise<EnrollmentRecord | undefined>;
  getEnrollmentByEnvironment(envZId: string): Promise<EnrollmentRecord | undefined>;
  /** False when it did not exist. */
  deleteEnrollment(id: string): Promise<boolean>;

  close(): Promise<void>;
}
