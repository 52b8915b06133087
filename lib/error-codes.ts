/**
 * Every stable error code of svc, as one typed set per boundary. A code is part of a contract — an
 * API client, a CLI script or a test matches on it — so codes are string-literal unions checked by
 * the compiler, never free strings. Where a boundary speaks HTTP, its table also gives the status.
 */

/**
 * Codes an agent answers a command with (its local API for the CLI, and remote commands through the
 * controller), with the status the agent gives them. Both executors (the single-machine agent and
 * the Kubernetes environment agent) answer with these, and test/contracts/remote-executor.ts holds
 * them to the same codes and messages for the same input.
 */
export const AGENT_ERRORS = {
  invalid_input: 400,
  invalid_share: 400,
  invalid_access: 400,
  invalid_bind: 400,
  not_private: 400,
  healthcheck_unsupported: 400,
  folder_not_found: 400,
  command_refused: 403,
  not_found: 404,
  unknown_share: 404,
  unknown_access: 404,
  conflict: 409,
  bind_failed: 409,
  already_running: 409,
  agent_error: 500,
  internal: 500,
  installation_not_connected: 503,
  share_not_ready: 504,
  access_not_ready: 504,
} as const;
export type AgentErrorCode = keyof typeof AGENT_ERRORS;
/** The agent's codes of a given status: `AgentCodeOf<400>` are its input errors. */
export type AgentCodeOf<S extends number> = {
  [K in AgentErrorCode]: (typeof AGENT_ERRORS)[K] extends S ? K : never;
}[AgentErrorCode];

/**
 * Codes of the controller API (docs/controller.md, "Errors"; the OpenAPI document's responses) and
 * their status. An agent's input errors pass through with the agent's code (`ApiErrorCode` includes
 * them): 404 for unknown tokens, 422 otherwise (controller/remoting-hub.ts).
 */
export const API_ERRORS = {
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  malformed_json: 400,
  body_too_large: 413,
  invalid_request: 422,
  unauthorized: 401,
  environment_not_found: 401,
  not_enrolled: 409,
  already_enrolled: 409,
  agent_controller_not_configured: 501,
  tunnel_not_offered: 501,
  share_token_taken: 409,
  share_token_quarantined: 409,
  tunnel_not_held: 403,
  too_many_replicas: 429,
  agent_unreachable: 502,
  agent_timeout: 502,
  agent_refused: 502,
  agent_error: 502,
  internal_error: 500,
} as const;
export type ApiErrorCode = keyof typeof API_ERRORS | AgentErrorCode;

/** Configuration files and flags (`svc config check`, start-up): always with every problem found. */
export type ConfigErrorCode = 'invalid_config' | 'config_unreadable' | 'invalid_input';

/** The stores of the agent and the controller (file, Kubernetes Secrets). */
export type StoreErrorCode =
  | 'conflict'
  | 'not_found'
  | 'store_write_failed'
  | 'store_unreadable'
  | 'store_corrupt'
  | 'store_locked'
  | 'store_unavailable';

/** The Kubernetes API client (lib/kube/client.ts). */
export type KubeErrorCode = 'kube_unreachable' | 'kube_api_error' | 'kube_config';

/** Local files of remoting: enrollment and environment files, controller identities. */
export type FileErrorCode =
  | 'file_unreadable'
  | 'file_corrupt'
  | 'enrollment_insecure'
  | 'enrollment_unreadable'
  | 'enrollment_incomplete'
  | 'invalid_identity'
  | 'data_dir_insecure';

/** The `svc` command's own refusals and its view of the services it calls. */
export type CliErrorCode =
  | 'exists'
  | 'cancelled'
  | 'already_enabled'
  | 'not_enabled'
  | 'enrolled'
  | 'agent_not_running'
  | 'bad_response'
  | 'controller_unreachable'
  | 'api_error';

/** The OAuth frontend's view of an identity provider that failed (sidecar/providers). */
export type FrontendErrorCode = 'provider_error' | 'invalid_token' | 'provider_unreachable';

/** A tunnel that cannot take another stream (lib/tunnel/stream-target.ts). */
export type TunnelErrorCode = 'tunnel_busy' | 'tunnel_closed';

export type ErrorCode =
  | TunnelErrorCode
  | AgentErrorCode
  | ApiErrorCode
  | ConfigErrorCode
  | StoreErrorCode
  | KubeErrorCode
  | FileErrorCode
  | FrontendErrorCode
  | CliErrorCode;

/**
 * The stable code of one problem in an input (a config file, a CLI flag, an API body, a CRD spec),
 * next to its field path and message.
 */
export const PROBLEM_CODES = [
  /** Missing or empty. */
  'required',
  /** Present but of the wrong type or shape. */
  'invalid',
  /** Not one of the allowed values, or out of range. */
  'not_allowed',
  /** A key the reader does not know (typos never fall back to a default). */
  'unknown_field',
  /** An OAuth provider that is not configured. */
  'unknown_provider',
  /** Valid in general, but not where this input is used (e.g. a web share through the API in a cluster). */
  'unsupported',
  /** Names a thing (a folder, a Secret) that does not exist. */
  'not_found',
  /** Depends on something that is not ready yet (the installation's OAuth settings). */
  'not_ready',
] as const;
export type ProblemCode = (typeof PROBLEM_CODES)[number];

/**
 * Reasons the operator writes in `Ready` conditions and in Events (docs/operator.md); the
 * environment agent reads some of them back (agent/remoting/kube-executor.ts).
 */
export type ConditionReason =
  | 'Ready'
  | 'Created'
  | 'Available'
  | 'DeploymentUnavailable'
  | 'ImagePullFailed'
  | 'ContainerCrashing'
  | 'ContainerConfigError'
  | 'Unschedulable'
  | 'IngressPending'
  | 'RoutePending'
  | 'RouteNotAccepted'
  | 'RouteApiMissing'
  | 'Pending'
  | 'InvalidSpec'
  | 'InstallationNotReady'
  | 'TokenConflict'
  | 'AuthShardFull'
  | 'AuthQuotaExceeded'
  | 'ShareNotFound'
  | 'ShareNotPrivate'
  | 'Enrolled'
  | 'AccountTokenMissing'
  | 'AccountTokenInvalid'
  | 'ControllerUnreachable'
  | 'RemotingNotConfigured'
  | 'EnrollmentFailed'
  | 'EnrollmentLost'
  | 'UnenrollSkipped';

export function isAgentErrorCode(code: unknown): code is AgentErrorCode {
  return typeof code === 'string' && Object.hasOwn(AGENT_ERRORS, code);
}

export function isApiErrorCode(code: unknown): code is ApiErrorCode {
  return typeof code === 'string' && (Object.hasOwn(API_ERRORS, code) || isAgentErrorCode(code));
}

export function isProblemCode(code: unknown): code is ProblemCode {
  return (PROBLEM_CODES as readonly unknown[]).includes(code);
}
