/**
 * Told of one request's exchange with a share's backend, on the path that proxies it (the agent's
 * request inspector, agent/inspector/recorder.ts). Bodies are shown chunk by chunk as they pass;
 * an observer copies what it keeps, never holding a chunk itself.
 */
export interface ExchangeObserver {
  /** A chunk of the request body as it goes to the backend. */
  requestBody(chunk: Buffer): void;
  /** The backend's response head, before it is passed on. */
  response(status: number, rawHeaders: readonly string[]): void;
  /** A chunk of the response body as it goes to the visitor. */
  responseBody(chunk: Buffer): void;
  /** The exchange is over, complete or cut off; called once. */
  end(): void;
}

/**
 * Starts observing one request of a share: its method, its path as the visitor gave it (without the
 * target's own prefix), and its headers as the backend gets them (a flat `[name, value, …]` list).
 */
export type ExchangeRecorder = (method: string, path: string, headers: readonly string[]) => ExchangeObserver;
