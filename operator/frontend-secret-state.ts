import type { Logger } from '../lib/logger.ts';
import { problem, problemText } from '../lib/errors.ts';
import { authServiceUrl, parseInstallation, type InstallationResult } from './frontend-secret.ts';
import type { KubeObject } from '../lib/kube/resources.ts';
import type { WatchSource } from './watches.ts';

/** The parsed installation frontend Secret, as the reconcilers read it. */
export interface InstallationView {
  /** undefined until the Secret was read (or found missing). */
  current(): InstallationResult | undefined;
}

/**
 * Keeps the installation's frontend Secret parsed as it changes. Construct it before the
 * reconcilers' watches are wired: its handler must run first, so that a reconciler woken by the
 * same change reads the new settings.
 */
export class InstallationState implements InstallationView {
  private readonly source: WatchSource;
  private readonly where: string;
  private readonly authService: string;
  private readonly logger: Logger;
  private installation: InstallationResult | undefined;

  constructor(source: WatchSource, where: { namespace: string; name: string }, logger: Logger) {
    this.source = source;
    this.where = `${where.namespace}/${where.name}`;
    this.authService = authServiceUrl(where);
    this.logger = logger;
    source.on({
      onAdd: (secret) => this.read(secret),
      onUpdate: (_old, secret) => this.read(secret),
      onDelete: () => this.read(undefined),
    });
  }

  current(): InstallationResult | undefined {
    return this.installation;
  }

  /** Reads the synced cache when no event did: a Secret that does not exist never sends one. */
  ensureRead(): void {
    if (!this.installation) this.read(this.source.list()[0]);
  }

  private read(secret: KubeObject | undefined): void {
    const installation = secret
      ? parseInstallation(secret.data as Record<string, string> | undefined, this.authService)
      : { ok: false as const, problems: [problem('', 'the Secret does not exist', 'not_found')] };
    this.installation = installation;
    if (installation.ok)
      this.logger.info(
        { secretRef: this.where, providers: installation.value.oauth.providers.map((p) => p.name) },
        'installation frontend settings loaded',
      );
    else
      this.logger.error(
        { secretRef: this.where, problems: installation.problems.map(problemText) },
        'installation frontend Secret is unusable; OAuth shares wait for it',
      );
  }
}
