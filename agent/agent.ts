import { randomBytes } from 'node:crypto';
import { parseDuration } from '../lib/duration.ts';
import { errorText, valueOrThrow } from '../lib/errors.ts';
import { compileGlob } from '../lib/glob.ts';
import type { Logger } from '../lib/logger.ts';
import type { ShareRoute } from '../lib/share/spec.ts';
import type { ShareFieldNames } from '../lib/share/validate.ts';
import type { ShareSource } from '../lib/share/source.ts';
import { listenHandler, type RunningListener } from './backends/listener.ts';
import { formatAddress, parseListenAddress, type ListenAddress } from '../lib/listen.ts';
import { proxyBackend } from './backends/proxy.ts';
import { webBackend } from './backends/web.ts';
import { httpHealthCheck, type HealthCheckResult } from './healthcheck.ts';
import {
  healthCheckUnsupported,
  installationNotConnected,
  notPrivate,
  unknownAccess,
  unknownShare,
} from './refusals.ts';
import {
  API_REQUEST_FIELDS,
  validateBindAddress,
  validateHealthCheckRequest,
  type RequestFieldNames,
} from './requests.ts';
import { validateShareRequest, type ShareRequest } from './share-request.ts';
import type { AccessRecord, AgentStore, ShareRecord } from './store.ts';
import { newToken } from '../lib/token.ts';
import type { StreamTarget } from '../lib/tunnel/stream-target.ts';
import type { SharePublisher } from './tunnel/publisher.ts';
import { remoteAccessHandler } from './tunnel/remote-access.ts';
import { listenTcp, localTcpAccess, remoteTcpAccess } from './tunnel/tcp-access.ts';
import { parseTcpTarget, tcpTargetProblem, type TcpTarget } from '../lib/share/tcp-target.ts';
import type { TunnelledShare } from './tunnel/serve-stream.ts';
import type { ExchangeRecorder } from '../lib/exchange-observer.ts';
import { shareRecorder } from './inspector/recorder.ts';
import type { InspectorStore } from './inspector/store.ts';

/** Share entry of the status response (seed: "Share entry (in the status response)"). */
export interface ShareEntry {
  token: string;
  shareMode: string;
  backendMode: string;
  backendEndpoint: string;
  frontendEndpoints: string[];
}

export interface AccessEntry {
  token: string;
  shareToken: string;
  bindAddress: string;
  endpoint: string;
}

export interface AgentStatus {
  shares: ShareEntry[] | null;
  accesses: AccessEntry[] | null;
}

/** A health check as asked for; `expectedStatus` and `timeout` (duration text) are checked here. */
export interface HealthCheckCall {
  readonly shareToken: string;
  readonly verb: string;
  readonly path: string;
  readonly expectedStatus: unknown;
  readonly timeout?: unknown;
  readonly followRedirects?: boolean;
}

export interface AgentOptions {
  readonly store: AgentStore;
  readonly logger: Logger;
  /** Providers configured on the frontend; a share may only name one of these. */
  readonly providerNames: readonly string[];
  /** Public URL of a share token (`http://<token>.<domain>:<port>`), once the frontend listens. */
  publicUrl?: (token: string) => string;
  /** The request inspector: every share's requests recorded into `store` (agent/inspector/). */
  readonly inspector?: { readonly store: InspectorStore; readonly ownCookie?: string };
}

/** A share as the agent's page shows it: the status entry with its OAuth settings and state. */
export interface ShareDetails extends ShareEntry {
  readonly oauth?: ShareRecord['oauth'];
  readonly webListing: boolean;
  readonly createdAt: string;
  /** Served now: by this machine's frontend, or published through the installation. */
  readonly online: boolean;
  readonly inspected: boolean;
}

/** An access as the agent's page shows it. */
export interface AccessDetails extends AccessEntry {
  readonly remote: boolean;
  readonly createdAt: string;
  /** Its local listener is up. */
  readonly online: boolean;
}

interface LiveShare {
  readonly record: ShareRecord;
  /** Where the frontend and accesses send requests: the proxy target, or the web share's local listener. */
  readonly backendUrl: URL;
  /** A TCP share's target. */
  readonly tcpTarget?: TcpTarget;
  readonly route: ShareRoute;
  readonly listener?: RunningListener;
  /** Records the share's requests where they are sent to the backend, when the inspector is on. */
  readonly recorder?: ExchangeRecorder;
}

interface LiveAccess {
  readonly record: AccessRecord;
  readonly listener?: RunningListener;
}

/** How long a share or access waits for the installation the tunnel service is connecting to. */
const PUBLISHER_WAIT_MS = 15_000;

/**
 * The agent: holds the shares and accesses of this machine, runs their backends (a local listener
 * per `web` share and per access), exposes the public ones to the frontend as a ShareSource, and runs
 * health checks. Every change is written to the store before it is reported done, and `start`
 * restores everything the store holds, so shares survive a restart. Changes are serialized (a
 * share's durable store write excepted: see `share`).
 */
export class Agent {
  private readonly shares = new Map<string, LiveShare>();
  private readonly accesses = new Map<string, LiveAccess>();
  private queue: Promise<unknown> = Promise.resolve();
  private readonly options: AgentOptions;
  /** Set while the environment publishes through an installation (agent/tunnel/service.ts). */
  private publisher: SharePublisher | undefined;
  private accessTarget: (() => StreamTarget | undefined) | undefined;
  /** Set from `expectPublisher` until `usePublisher` is called: the tunnel service is connecting. */
  private publisherPending: { readonly arrived: Promise<void>; arrive(): void } | undefined;
  /** True from `expectPublisher` until `usePublisher`, also after a failed first attempt. */
  private connecting = false;
  private readonly changeListeners = new Set<() => void>();

  constructor(options: AgentOptions) {
    this.options = options;
  }

  setPublicUrl(publicUrl: (token: string) => string): void {
    this.options.publicUrl = publicUrl;
  }

  /** Restores shares and accesses from the store. A share that cannot start is logged, kept, and retried next start. */
  async start(): Promise<void> {
    for (const record of await this.options.store.listShares()) {
      try {
        this.shares.set(record.token, await this.startShare(record));
      } catch (err) {
        this.options.logger.error({ share: record.token, err: errorText(err) }, 'cannot restore share');
      }
    }
    for (const record of await this.options.store.listAccesses()) {
      const share = this.shares.get(record.shareToken);
      if (!share && !record.remote) continue;
      try {
        const address = valueOrThrow(
          validateBindAddress(record.bindAddress, API_REQUEST_FIELDS),
          'invalid_bind',
          `stored access ${record.token}`,
        );
        const listener = share
          ? await this.startAccess(share, address)
          : await this.startRemoteAccess(record.shareToken, record.backendMode === 'tcp', address);
        this.accesses.set(record.token, { record, listener });
      } catch (err) {
        this.options.logger.error({ access: record.token, err: errorText(err) }, 'cannot restore access');
        this.accesses.set(record.token, { record });
      }
    }
    this.options.logger.info({ shares: this.shares.size, accesses: this.accesses.size }, 'agent state restored');
  }

  /**
   * The public shares, as the frontend looks them up by host. Private shares are never listed, and
   * none while an installation publishes them (its frontend serves them, with its providers).
   */
  shareSource(): ShareSource {
    const lookup = (token: string) => {
      const live = this.shares.get(token);
      return live && live.record.shareMode === 'public' && !this.publisher ? live.route : undefined;
    };
    return { lookup, has: (token) => lookup(token) !== undefined };
  }

  /**
   * Publishes every share through `publisher` from now on (registering them all at the installation),
   * or, with undefined, on this machine's frontend again. `accessTarget`: the installation's access
   * connection, for accesses to other machines' private shares.
   */
  usePublisher(publisher: SharePublisher | undefined, accessTarget?: () => StreamTarget | undefined): Promise<void> {
    return this.serialized(async () => {
      this.publisher = publisher;
      this.accessTarget = accessTarget;
      this.publisherPending?.arrive();
      this.publisherPending = undefined;
      this.connecting = false;
      this.changed();
      if (!publisher) return;
      const refused = await publisher.sync([...this.shares.values()].map((s) => s.record));
      if (refused.length > 0) this.options.logger.error({ refused }, 'shares not published by the installation');
    });
  }

  /**
   * The environment was just enabled and the tunnel service is reaching its installation (until it
   * calls `usePublisher`, or `publisherDelayed` when its first attempt failed). A share or access
   * made meanwhile waits for it, `PUBLISHER_WAIT_MS` at most: otherwise the first command after `svc enable` would answer as if this machine had no
   * installation (a share with this machine's URL, an access that finds no share of the account).
   */
  expectPublisher(): void {
    this.connecting = true;
    if (this.publisherPending) return;
    let arrive = (): void => undefined;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    this.publisherPending = { arrived, arrive };
  }

  /**
   * The tunnel service's first attempt failed (it keeps retrying): commands stop waiting for it, and
   * an access to another machine's share says this machine is not connected yet.
   */
  publisherDelayed(): void {
    this.publisherPending?.arrive();
    this.publisherPending = undefined;
  }

  /** Waits, bounded, for a publisher the tunnel service is connecting (see `expectPublisher`). */
  private async publisherSettled(): Promise<void> {
    const pending = this.publisherPending;
    if (!pending) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, PUBLISHER_WAIT_MS)));
    await Promise.race([pending.arrived, late]);
    clearTimeout(timer);
  }

  /** A share as the tunnel serves it (public and private alike); undefined for an unknown token. */
  tunnelShare(token: string): TunnelledShare | undefined {
    const live = this.shares.get(token);
    if (!live) return undefined;
    const { shareMode } = live.record;
    return {
      shareMode,
      backendUrl: live.backendUrl,
      ...(live.tcpTarget ? { tcpTarget: live.tcpTarget } : {}),
      ...(live.recorder ? { recorder: live.recorder } : {}),
    };
  }

  /**
   * Creates a share; `names` are the field names of the surface that asked (for its error messages).
   * The store checks and takes the record inside the change queue, but its durable write is awaited
   * outside it: shares created together then share one write of the store (agent/file-store.ts
   * groups them) instead of queueing behind each other's fsync. Reported done once written.
   */
  async share(body: ShareRequest, names: ShareFieldNames): Promise<ShareEntry> {
    await this.publisherSettled();
    let stored: Promise<void> = Promise.resolve();
    const live = await this.serialized(async () => {
      const providers = this.publisher?.providerNames ?? this.options.providerNames;
      const record = validateShareRequest(body, this.freshToken(), providers, names);
      const live = await this.startShare(record);
      try {
        await this.publisher?.publish(record);
      } catch (err) {
        await this.dropShare(live);
        throw err;
      }
      stored = this.options.store.createShare(record);
      // Handled below, after the queue moves on; this keeps an early rejection from counting as unhandled.
      stored.catch(() => undefined);
      this.shares.set(record.token, live);
      return live;
    });
    try {
      await stored;
    } catch (err) {
      // Unless an unshare took it meanwhile, the share the store refused must go.
      await this.serialized(async () => {
        if (this.shares.get(live.record.token) !== live) return;
        this.shares.delete(live.record.token);
        await this.dropShare(live);
      });
      throw err;
    }
    const { record } = live;
    this.options.logger.info(
      { share: record.token, shareMode: record.shareMode, backendMode: record.backendMode },
      'share created',
    );
    this.changed();
    return this.shareEntry(live);
  }

  unshare(token: string): Promise<{ removedAccesses: string[] }> {
    return this.serialized(async () => {
      const live = this.shares.get(token);
      if (!live) throw unknownShare(token);
      await this.publisher?.withdraw(token);
      await this.options.store.deleteShare(token);
      this.shares.delete(token);
      await this.closeShare(live);
      const removedAccesses: string[] = [];
      for (const [accessToken, access] of this.accesses) {
        if (access.record.shareToken !== token) continue;
        this.accesses.delete(accessToken);
        await access.listener?.close();
        removedAccesses.push(accessToken);
      }
      this.options.logger.info({ share: token, removedAccesses: removedAccesses.length }, 'share removed');
      this.changed();
      return { removedAccesses };
    });
  }

  /**
   * Creates a private access: a listener at `bind` (default 127.0.0.1 on a free port) forwarding to
   * the share. `names` are the field names of the surface that asked (for its error messages).
   */
  async access(shareToken: string, bind: string | undefined, names: RequestFieldNames): Promise<AccessEntry> {
    if (!this.shares.has(shareToken)) await this.publisherSettled();
    return this.serialized(async () => {
      const share = this.shares.get(shareToken);
      if (!share && this.publisher) return this.remoteAccess(shareToken, bind, names);
      if (!share && this.connecting) throw installationNotConnected();
      if (!share) throw unknownShare(shareToken);
      if (share.record.shareMode !== 'private') throw notPrivate(shareToken, this.frontendEndpoints(share.record));
      const address = valueOrThrow(validateBindAddress(bind ?? '127.0.0.1:0', names), 'invalid_bind', 'invalid access');
      const tcp = share.record.backendMode === 'tcp';
      return this.keepAccess(shareToken, await this.startAccess(share, address), { remote: false, tcp });
    });
  }

  /** An access to a private share of another machine of the account, through the installation. */
  private async remoteAccess(
    shareToken: string,
    bind: string | undefined,
    names: RequestFieldNames,
  ): Promise<AccessEntry> {
    const { backendMode } = await (this.publisher as SharePublisher).lookupPrivate(shareToken);
    const address = valueOrThrow(validateBindAddress(bind ?? '127.0.0.1:0', names), 'invalid_bind', 'invalid access');
    const tcp = backendMode === 'tcp';
    return this.keepAccess(shareToken, await this.startRemoteAccess(shareToken, tcp, address), { remote: true, tcp });
  }

  /** Records a started access listener in the store (closing it when that fails) and in the live table. */
  private async keepAccess(
    shareToken: string,
    listener: RunningListener,
    { remote, tcp }: { remote: boolean; tcp: boolean },
  ): Promise<AccessEntry> {
    const record: AccessRecord = {
      token: this.freshToken(),
      shareToken,
      bindAddress: formatAddress(listener),
      ...(remote ? { remote: true } : {}),
      ...(tcp ? { backendMode: 'tcp' as const } : {}),
      createdAt: new Date().toISOString(),
    };
    try {
      await this.options.store.createAccess(record);
    } catch (err) {
      await listener.close();
      throw err;
    }
    this.accesses.set(record.token, { record, listener });
    this.options.logger.info(
      { access: record.token, share: shareToken, bindAddress: record.bindAddress },
      remote ? 'access created (through the installation)' : 'access created',
    );
    this.changed();
    return accessEntry(record);
  }

  unaccess(token: string): Promise<void> {
    return this.serialized(async () => {
      const live = this.accesses.get(token);
      if (!live) throw unknownAccess(token);
      await this.options.store.deleteAccess(token);
      this.accesses.delete(token);
      await live.listener?.close();
      this.options.logger.info({ access: token }, 'access removed');
      this.changed();
    });
  }

  status(): AgentStatus {
    const shares = [...this.shares.values()].map((s) => this.shareEntry(s));
    const accesses = [...this.accesses.values()].map((a) => accessEntry(a.record));
    return { shares: shares.length ? shares : null, accesses: accesses.length ? accesses : null };
  }

  /** Shares and accesses with what the agent's page shows besides the status entries. */
  details(): { shares: ShareDetails[]; accesses: AccessDetails[] } {
    const shares = [...this.shares.values()].map((live) => ({
      ...this.shareEntry(live),
      ...(live.record.oauth ? { oauth: live.record.oauth } : {}),
      webListing: live.record.webListing ?? false,
      createdAt: live.record.createdAt,
      online: live.record.shareMode === 'private' || this.publisher !== undefined || !!this.options.publicUrl,
      inspected: live.recorder !== undefined,
    }));
    const accesses = [...this.accesses.values()].map((a) => ({
      ...accessEntry(a.record),
      remote: a.record.remote ?? false,
      createdAt: a.record.createdAt,
      online: a.listener !== undefined,
    }));
    return { shares, accesses };
  }

  /** Calls `listener` after every change of the shares or accesses; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** A share's backend URL, for a replay. */
  backendOf(token: string): URL | undefined {
    return this.shares.get(token)?.backendUrl;
  }

  /**
   * Health check of a proxy share's target (seed: "Health check rules"). `names` are the field
   * names of the surface that asked (for its error messages).
   */
  async healthCheck(call: HealthCheckCall, names: RequestFieldNames): Promise<HealthCheckResult> {
    const live = this.shares.get(call.shareToken);
    if (!live) throw unknownShare(call.shareToken);
    if (live.record.backendMode !== 'proxy') throw healthCheckUnsupported(call.shareToken, live.record.backendMode);
    const limits = valueOrThrow(validateHealthCheckRequest(call, names), 'invalid_input', 'invalid health check');
    return httpHealthCheck({
      target: live.backendUrl,
      verb: call.verb,
      ...limits,
      followRedirects: call.followRedirects ?? false,
    });
  }

  async close(): Promise<void> {
    await this.queue.catch(() => undefined);
    for (const a of this.accesses.values()) await a.listener?.close();
    for (const s of this.shares.values()) await this.closeShare(s);
    this.accesses.clear();
    this.shares.clear();
  }

  /** Stops a share's local listener and withdraws it from the installation, for a share not kept. */
  private async dropShare(live: LiveShare): Promise<void> {
    await this.closeShare(live);
    if (this.publisher) await this.publisher.withdraw(live.record.token).catch(() => undefined);
  }

  private async startShare(record: ShareRecord): Promise<LiveShare> {
    let listener: RunningListener | undefined;
    let backendUrl: URL;
    if (record.backendMode === 'tcp') {
      const tcpTarget = parseTcpTarget(record.target);
      if (!tcpTarget) throw new Error(`share ${record.token}: ${tcpTargetProblem(record.target)}`);
      // Never routed by URL: a TCP share is reached only through TCP accesses and tunnel streams.
      return { record, backendUrl: new URL(`tcp://${record.target}`), route: tcpRoute(record), tcpTarget };
    }
    if (record.backendMode === 'web') {
      // The loopback listener is reachable by every local user; the secret path keeps it for the
      // frontend and accesses, so an OAuth web share cannot be read around the login.
      const pathSecret = randomBytes(16).toString('base64url');
      const handler = webBackend({
        root: record.target,
        listing: record.webListing ?? false,
        pathSecret,
        logger: this.options.logger,
      });
      listener = await listenHandler(handler, { host: '127.0.0.1', port: 0 });
      backendUrl = new URL(`http://127.0.0.1:${listener.port}/${pathSecret}/`);
    } else {
      backendUrl = new URL(record.target);
    }
    const oauth = record.oauth
      ? {
          provider: record.oauth.provider,
          emailPatterns: record.oauth.emailAddressPatterns.map((p) => compileGlob(p)),
          checkIntervalMs: parseDuration(record.oauth.checkInterval) ?? 3 * 3_600_000,
        }
      : undefined;
    const inspector = this.options.inspector;
    const recorder = inspector ? shareRecorder(record.token, inspector.store, inspector.ownCookie) : undefined;
    // The agent mints every token itself, so a share's creation time tells it from any other share.
    const route: ShareRoute = {
      token: record.token,
      instance: `${record.token}@${record.createdAt}`,
      target: backendUrl,
      ...(oauth ? { oauth } : {}),
      ...(recorder ? { recorder } : {}),
    };
    return { record, backendUrl, route, ...(listener ? { listener } : {}), ...(recorder ? { recorder } : {}) };
  }

  /** Stops a share's listeners and forgets what the inspector recorded of it. */
  private async closeShare(live: LiveShare): Promise<void> {
    this.options.inspector?.store.forget(live.record.token);
    await live.listener?.close();
  }

  private changed(): void {
    for (const listener of this.changeListeners) listener();
  }

  private async startAccess(share: LiveShare, address: ListenAddress): Promise<RunningListener> {
    if (share.tcpTarget) return listenTcp(localTcpAccess(share.tcpTarget, this.options.logger), address);
    const handler = proxyBackend({
      target: share.backendUrl,
      identityHeaders: 'strip',
      logger: this.options.logger,
      ...(share.recorder ? { recorder: share.recorder } : {}),
    });
    try {
      return await listenHandler(handler, address);
    } catch (err) {
      handler.close();
      throw err;
    }
  }

  private async startRemoteAccess(shareToken: string, tcp: boolean, address: ListenAddress): Promise<RunningListener> {
    if (tcp)
      return listenTcp(
        remoteTcpAccess(() => this.accessTarget?.(), shareToken, this.options.logger),
        address,
      );
    const handler = remoteAccessHandler({ target: () => this.accessTarget?.(), shareToken });
    return listenHandler(handler, address);
  }

  private shareEntry(live: LiveShare): ShareEntry {
    return {
      token: live.record.token,
      shareMode: live.record.shareMode,
      backendMode: live.record.backendMode,
      backendEndpoint: live.record.target,
      frontendEndpoints: this.frontendEndpoints(live.record),
    };
  }

  private frontendEndpoints(record: ShareRecord): string[] {
    if (this.publisher) return this.publisher.frontendEndpoints(record);
    if (record.shareMode !== 'public' || !this.options.publicUrl) return [];
    return [this.options.publicUrl(record.token)];
  }

  private freshToken(): string {
    for (;;) {
      const token = newToken();
      if (!this.shares.has(token) && !this.accesses.has(token)) return token;
    }
  }

  private serialized<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function accessEntry(record: AccessRecord): AccessEntry {
  return {
    token: record.token,
    shareToken: record.shareToken,
    bindAddress: record.bindAddress,
    endpoint: `${record.backendMode === 'tcp' ? 'tcp' : 'http'}://${endpointHost(record.bindAddress)}`,
  };
}

/** A TCP share's route: a placeholder the frontend never serves (TCP shares are private). */
function tcpRoute(record: ShareRecord): ShareRoute {
  return { token: record.token, instance: `${record.token}@${record.createdAt}`, target: new URL('tcp://invalid') };
}

/** An access bound to a wildcard address is reached on loopback from this machine. */
function endpointHost(bindAddress: string): string {
  const parsed = parseListenAddress(bindAddress);
  if (!parsed) return bindAddress;
  const host = parsed.host === '0.0.0.0' ? '127.0.0.1' : parsed.host === '::' ? '::1' : parsed.host;
  return formatAddress({ host, port: parsed.port });
}
