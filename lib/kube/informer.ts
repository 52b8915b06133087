import type { Logger } from '../logger.ts';
import { Sleeper } from '../sleeper.ts';
import { errorText } from '../errors.ts';
import { backoffDelay, type BackoffPolicy } from '../backoff.ts';
import { KubeApiError, isGone, type KubeClient, type WatchOptions } from './client.ts';
import { objectKey, type KubeList, type KubeObject, type WatchEvent } from './resources.ts';

type Query = Record<string, string | number | boolean | undefined>;

/** Where an informer lists and watches; the API client in production, a scripted source in unit tests. */
export interface ListWatchSource {
  list(query: Query): Promise<KubeList<KubeObject>>;
  watch(
    query: Query,
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
    options?: Omit<WatchOptions, 'signal'>,
  ): Promise<void>;
}

export function apiSource(client: KubeClient, path: string): ListWatchSource {
  return {
    list: (query) => client.list(path, query),
    watch: (query, onEvent, signal, options = {}) => client.watch(path, query, onEvent, { ...options, signal }),
  };
}

export interface InformerHandlers<T extends KubeObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

export type RestartReason = 'gone' | 'error' | 'closed';

export interface InformerOptions {
  readonly name: string;
  readonly source: ListWatchSource;
  readonly logger: Logger;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Delay between failed attempts (list or watch): exponential, capped, jittered. */
  readonly backoff?: BackoffPolicy;
  /** Server-side watch timeout; a random value in [min, 2*min) spreads reconnects out. */
  readonly watchTimeoutSeconds?: number;
  /** A watch that ends cleanly sooner than this without any event counts as a failure (no tight loop). */
  readonly minWatchMs?: number;
  /**
   * A watch that received nothing (not even a bookmark) for this long is dropped and resumed: its
   * connection is dead though no error said so. Default twice the watch's `timeoutSeconds`, by
   * which time the server would have ended it.
   */
  readonly watchIdleMs?: number;
  readonly pageSize?: number;
  /**
   * Applied to every object before it is stored or handed to handlers (client-go's
   * `SetTransform`): keeps only what the cache's readers use, so the cache's memory follows that
   * and not the whole object (managedFields alone are often half of it).
   */
  readonly transform?: (obj: KubeObject) => KubeObject;
  readonly onRestart?: (reason: RestartReason) => void;
  readonly random?: () => number;
}

const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1000, maxMs: 30_000 };

/**
 * A list+watch cache of one resource (client-go's reflector + store). It lists (in pages), then
 * watches from the list's resourceVersion with bookmarks; a watch that ends is resumed from the last
 * seen resourceVersion; `410 Gone` (expired resourceVersion) forces a relist whose differences are
 * delivered as add/update/delete; every other error is retried with jittered exponential backoff.
 * A watch that hears nothing past its idle deadline is dropped and resumed (a dead connection need
 * not say so), and `silentForMs` tells a health check how long the API server has not answered.
 * It never gives up and never exits the process: an API-server outage just means retries.
 */
export class Informer<T extends KubeObject = KubeObject> {
  private readonly options: InformerOptions;
  private readonly cache = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly abort = new AbortController();
  private resourceVersion = '';
  private synced = false;
  private failures = 0;
  private loop: Promise<void> | undefined;
  private readonly sleeper = new Sleeper();
  /** When the API server last answered this informer: a list page, a watch opened, any event. */
  private lastContact = 0;

  constructor(options: InformerOptions) {
    this.options = options;
  }

  on(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }

  start(): void {
    this.lastContact = Date.now();
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.sleeper.wake();
    await this.loop;
  }

  /** True once the first list has filled the cache. */
  get hasSynced(): boolean {
    return this.synced;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(`${namespace ?? ''}/${name}`);
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  get size(): number {
    return this.cache.size;
  }

  /**
   * How long the API server has not answered this informer (0 before `start`). A healthy watch
   * hears something at least when it is reopened, every `timeoutSeconds`; much longer means every
   * list and watch since has failed or hung.
   */
  silentForMs(now = Date.now()): number {
    return this.loop ? Math.max(0, now - this.lastContact) : 0;
  }

  /** The name it was created with (a resource's plural), for logs and health details. */
  get name(): string {
    return this.options.name;
  }

  private async run(): Promise<void> {
    const { logger } = this.options;
    while (!this.abort.signal.aborted) {
      try {
        if (!this.resourceVersion) await this.relist();
        await this.watchOnce();
      } catch (err) {
        if (this.abort.signal.aborted) break;
        const gone = isGone(err);
        if (gone) this.resourceVersion = '';
        this.failures++;
        const delay = backoffDelay(this.options.backoff ?? DEFAULT_BACKOFF, this.failures, this.options.random);
        this.options.onRestart?.(gone ? 'gone' : 'error');
        const log =
          this.failures <= 3 || this.failures % 10 === 0 ? logger.warn.bind(logger) : logger.debug.bind(logger);
        log(
          { informer: this.options.name, failures: this.failures, retryInMs: delay, gone },
          `watch failed, retrying: ${errorText(err)}`,
        );
        await this.sleeper.sleep(delay);
      }
    }
  }

  private selectors(): Query {
    return { labelSelector: this.options.labelSelector, fieldSelector: this.options.fieldSelector };
  }

  private async relist(): Promise<void> {
    const items: T[] = [];
    let continueToken: string | undefined;
    let resourceVersion: string;
    do {
      const page = await this.options.source.list({
        ...this.selectors(),
        limit: this.options.pageSize ?? 500,
        continue: continueToken,
      });
      this.lastContact = Date.now();
      for (const item of page.items) items.push(this.transformed(item));
      continueToken = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion ?? '';
    } while (continueToken);
    const fresh = new Map(items.map((item) => [objectKey(item), item]));
    for (const [key, old] of this.cache) {
      if (!fresh.has(key)) {
        this.cache.delete(key);
        this.emit((h) => h.onDelete?.(old));
      }
    }
    for (const [key, item] of fresh) this.upsert(key, item);
    this.resourceVersion = resourceVersion;
    this.synced = true;
  }

  private async watchOnce(): Promise<void> {
    const started = Date.now();
    let events = 0;
    const min = this.options.watchTimeoutSeconds ?? 300;
    const random = this.options.random ?? Math.random;
    const timeoutSeconds = Math.floor(min + min * random());
    const query: Query = {
      ...this.selectors(),
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
    };
    await this.options.source.watch(
      query,
      (event) => {
        events++;
        this.lastContact = Date.now();
        this.handleEvent(event);
      },
      this.abort.signal,
      {
        idleTimeoutMs: this.options.watchIdleMs ?? 2 * timeoutSeconds * 1000,
        onOpen: () => {
          this.lastContact = Date.now();
        },
      },
    );
    this.lastContact = Date.now();
    if (events === 0 && Date.now() - started < (this.options.minWatchMs ?? 1000)) {
      throw new KubeApiError(0, 'WatchClosedEarly', 'watch ended immediately without events');
    }
    this.failures = 0;
    this.options.onRestart?.('closed');
  }

  private transformed(obj: KubeObject): T {
    return (this.options.transform ? this.options.transform(obj) : obj) as T;
  }

  private handleEvent(event: WatchEvent): void {
    const obj = event.object;
    if (event.type === 'ERROR') {
      const code = obj.code ?? 500;
      throw new KubeApiError(code, obj.reason ?? 'WatchError', `watch error: ${obj.message ?? code}`);
    }
    const rv = obj.metadata?.resourceVersion;
    if (event.type !== 'BOOKMARK') {
      const key = objectKey(obj);
      if (event.type === 'DELETED') {
        const old = this.cache.get(key);
        this.cache.delete(key);
        this.emit((h) => h.onDelete?.(old ?? this.transformed(obj)));
      } else {
        this.upsert(key, this.transformed(obj));
      }
    }
    if (rv) this.resourceVersion = rv;
    this.failures = 0;
  }

  private upsert(key: string, obj: T): void {
    const old = this.cache.get(key);
    this.cache.set(key, obj);
    if (!old) this.emit((h) => h.onAdd?.(obj));
    else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.emit((h) => h.onUpdate?.(old, obj));
  }

  private emit(call: (h: InformerHandlers<T>) => void): void {
    for (const h of this.handlers) {
      try {
        call(h);
      } catch (err) {
        this.options.logger.error({ informer: this.options.name }, `informer handler failed: ${errorText(err)}`);
      }
    }
  }
}
