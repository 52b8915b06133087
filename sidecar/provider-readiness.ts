import { errorText } from '../lib/errors.ts';
import type { Logger } from '../lib/logger.ts';
import type { Authenticator } from './auth.ts';

/**
 * Whether the identity providers are usable (OIDC discovery done): the frontend's `/readyz`. A
 * provider that is down at start-up is retried every 5 s until it answers or the frontend stops,
 * so a pod becomes ready by itself once its provider is reachable.
 */
export class ProviderReadiness {
  private ready: boolean;
  private stopped = false;

  constructor(auth: Authenticator | undefined, log: Logger) {
    this.ready = auth === undefined;
    if (auth) void this.wait(auth, log);
  }

  get isReady(): boolean {
    return this.ready;
  }

  stop(): void {
    this.stopped = true;
  }

  private async wait(auth: Authenticator, log: Logger): Promise<void> {
    while (!this.ready && !this.stopped) {
      try {
        await auth.ready();
        this.ready = true;
        log.info('identity providers ready');
      } catch (err) {
        log.warn({ err: errorText(err) }, 'identity provider not ready; retrying in 5s');
        await new Promise((r) => setTimeout(r, 5000).unref());
      }
    }
  }
}
