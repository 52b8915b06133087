import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/logger.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { KubeObject, Share, WatchEvent } from '../lib/kube/resources.ts';
import { AccessReconciler } from './access-reconciler.ts';
import { AUTH_CONFIG_KEY, AuthConfigReconciler } from './auth-config-reconciler.ts';
import type { Caches } from './caches.ts';
import { EnrollmentReconciler } from './enrollment-reconciler.ts';
import type { EventRecorder } from './events.ts';
import { Informer, type ListWatchSource } from '../lib/kube/informer.ts';
import { InstallationState } from './frontend-secret-state.ts';
import { ShareReconciler } from './share-reconciler.ts';
import { initialKeys, needsReconcile, wireWatches, type Enqueue, type WatchSource } from './watches.ts';
import type { InformerHandlers } from '../lib/kube/informer.ts';

const logger = createLogger('test', { destination: new Writable({ write: (_c, _e, cb) => cb() }) });

/** A watch source the test drives by hand. */
class Source<T extends KubeObject = KubeObject> implements WatchSource<T> {
  readonly items: T[] = [];
  private readonly handlers: InformerHandlers<T>[] = [];
  on(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }
  list(): T[] {
    return this.items;
  }
  add(obj: T): void {
    for (const h of this.handlers) h.onAdd?.(obj);
  }
  update(old: T, obj: T): void {
    for (const h of this.handlers) h.onUpdate?.(old, obj);
  }
  delete(obj: T): void {
    for (const h of this.handlers) h.onDelete?.(obj);
  }
}

/** Records what the wiring enqueues, `key` or `key+ms`. */
function recorder(): Enqueue & { keys: string[] } {
  const keys: string[] = [];
  return { keys, add: (key) => keys.push(key), addAfter: (key, ms) => keys.push(`${key}+${ms}`) };
}

const meta = (name: string, extra: Partial<KubeObject['metadata']> = {}): KubeObject['metadata'] => ({
  name,
  namespace: 'ns',
  resourceVersion: '1',
  generation: 1,
  ...extra,
});

describe('wireWatches', () => {
  it('For: enqueues the object on add and on an update that needs a reconcile, never on delete', () => {
    const primary = new Source();
    const queue = recorder();
    wireWatches({ kind: 'Share', watches: { for: primary } }, queue);
    const reconciled = { metadata: meta('a', { generation: 2 }), status: { observedGeneration: 2 } };
    primary.add(reconciled);
    primary.update(reconciled, { ...reconciled, metadata: { ...reconciled.metadata, resourceVersion: '2' } });
    primary.update(reconciled, { ...reconciled, metadata: { ...reconciled.metadata, generation: 3 } });
    primary.delete(reconciled);
    expect(queue.keys).toEqual(['ns/a', 'ns/a']);
  });

  it("Owns: a child wakes the owner its controller reference names, of the reconciler's kind only", () => {
    const children = new Source();
    const queue = recorder();
    wireWatches({ kind: 'Share', watches: { owns: [children] } }, queue);
    const ref = (kind: string, controller = true) => ({ apiVersion: 'v', kind, name: 'owner', uid: 'u', controller });
    children.add({ metadata: meta('c1', { ownerReferences: [ref('Share')] }) });
    children.delete({ metadata: meta('c2', { ownerReferences: [ref('Access')] }) });
    children.update({ metadata: meta('c3') }, { metadata: meta('c3', { ownerReferences: [ref('Share', false)] }) });
    children.delete({ metadata: meta('c4', { ownerReferences: [ref('Share')] }) });
    expect(queue.keys).toEqual(['ns/owner', 'ns/owner']);
  });

  it('Watches: maps every change through its function, delayed when asked', () => {
    const other = new Source();
    const queue = recorder();
    wireWatches(
      {
        kind: 'Share',
        watches: {
          watches: [
            { source: other, map: (c) => [`${c.type}:${c.object.metadata.name}`] },
            { source: other, map: () => ['later'], delayMs: 500 },
          ],
        },
      },
      queue,
    );
    other.add({ metadata: meta('x') });
    other.delete({ metadata: meta('x') });
    expect(queue.keys).toEqual(['added:x', 'later+500', 'deleted:x', 'later+500']);
  });

  it('initial keys: every primary object and the fixed keys', () => {
    const primary = new Source();
    primary.items.push({ metadata: meta('a') }, { metadata: { name: 'b' } });
    expect(initialKeys({ for: primary, keys: ['/singleton'] })).toEqual(['ns/a', '/b', '/singleton']);
  });

  it('needsReconcile ignores status-only writes of the current generation', () => {
    const old = { metadata: meta('a'), status: { observedGeneration: 1 } };
    expect(needsReconcile(old, { ...old, metadata: { ...old.metadata, resourceVersion: '9' } })).toBe(false);
    expect(needsReconcile(old, { ...old, metadata: { ...old.metadata, labels: { x: 'y' } } })).toBe(true);
    expect(needsReconcile(old, { ...old, metadata: { ...old.metadata, deletionTimestamp: 'now' } })).toBe(true);
    expect(needsReconcile(old, { metadata: old.metadata })).toBe(true);
  });
});

/** An informer over a list/watch source whose watch stays open and delivers what the test pushes. */
function liveInformer<T extends KubeObject>(name: string): { informer: Informer<T>; push: (e: WatchEvent) => void } {
  let push: ((e: WatchEvent) => void) | undefined;
  const source: ListWatchSource = {
    list: () => Promise.resolve({ metadata: { resourceVersion: '1' }, items: [] }),
    watch: (_query, onEvent, signal) =>
      new Promise<void>((resolve) => {
        push = onEvent;
        signal.addEventListener('abort', () => resolve());
      }),
  };
  const informer = new Informer<T>({ name, source, logger });
  return {
    informer,
    push: (e) => {
      if (!push) throw new Error(`${name} is not watching yet`);
      push(e);
    },
  };
}

describe("the reconcilers' declared watches", () => {
  async function setUp() {
    const live = {
      shares: liveInformer<Share>('shares'),
      accesses: liveInformer('accesses'),
      enrollments: liveInformer('enrollments'),
      deployments: liveInformer('deployments'),
      services: liveInformer('services'),
      ingresses: liveInformer('ingresses'),
      secrets: liveInformer('secrets'),
      frontendSecret: liveInformer('frontendSecret'),
      authSecrets: liveInformer('authSecrets'),
    };
    const caches = Object.fromEntries(Object.entries(live).map(([k, v]) => [k, v.informer])) as unknown as Caches;
    // Never called: only the watch declarations are under test.
    const client = {} as KubeClient;
    const events = {} as EventRecorder;
    const installation = new InstallationState(caches.frontendSecret, { namespace: 'sys', name: 'fe' }, logger);
    const deps = { client, caches, events, logger, image: 'img' };
    const queues = {
      share: recorder(),
      access: recorder(),
      auth: recorder(),
      enrollment: recorder(),
    };
    wireWatches(
      new ShareReconciler({ ...deps, installation, domain: 'd', ingress: { annotations: {} } }),
      queues.share,
    );
    wireWatches(new AccessReconciler(deps), queues.access);
    wireWatches(
      new AuthConfigReconciler({ client, caches, installation, logger, secret: { namespace: 'sys', name: 'a' } }),
      queues.auth,
    );
    wireWatches(new EnrollmentReconciler(deps), queues.enrollment);
    const informers = Object.values(live).map((l) => l.informer);
    for (const i of informers) i.start();
    const started = Date.now();
    for (;;) {
      try {
        for (const l of Object.values(live))
          l.push({ type: 'BOOKMARK', object: { metadata: { name: '', resourceVersion: '1' } } });
        break;
      } catch (err) {
        if (Date.now() - started > 3000) throw err;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    const clear = () => Object.values(queues).forEach((q) => q.keys.splice(0));
    return { live, queues, installation, clear, stop: () => Promise.all(informers.map((i) => i.stop())) };
  }

  const share = (name: string, spec: Share['spec'], rv = '2', status?: Share['status']): Share => ({
    metadata: meta(name, { resourceVersion: rv }),
    spec,
    ...(status ? { status } : {}),
  });

  it('a Share wakes itself, the Accesses of its namespace, and the auth config when it uses OAuth', async () => {
    const { live, queues, stop } = await setUp();
    try {
      live.accesses.push({ type: 'ADDED', object: { metadata: meta('acc') } });
      live.accesses.push({ type: 'ADDED', object: { metadata: { ...meta('elsewhere'), namespace: 'other' } } });
      live.shares.push({ type: 'ADDED', object: share('s', { token: 'tok', oauth: { provider: 'p' } }) });
      expect(queues.share.keys).toEqual(['ns/s']);
      expect(queues.access.keys).toEqual(['ns/acc', 'other/elsewhere', 'ns/acc']);
      expect(queues.auth.keys).toEqual([`${AUTH_CONFIG_KEY}+1000`]);
      expect(queues.enrollment.keys).toEqual([]);
    } finally {
      await stop();
    }
  });

  it('a status-only update of a public Share wakes nothing; a new token wakes the Accesses', async () => {
    const { live, queues, clear, stop } = await setUp();
    try {
      live.accesses.push({ type: 'ADDED', object: { metadata: meta('acc') } });
      const before = share('s', { shareMode: 'private' }, '2', { observedGeneration: 1 });
      live.shares.push({ type: 'ADDED', object: before });
      clear();
      live.shares.push({
        type: 'MODIFIED',
        object: { ...before, metadata: { ...before.metadata, resourceVersion: '3' } },
      });
      expect(Object.values(queues).flatMap((q) => q.keys)).toEqual([]);
      live.shares.push({
        type: 'MODIFIED',
        object: {
          ...before,
          metadata: { ...before.metadata, resourceVersion: '4' },
          status: { observedGeneration: 1, token: 't2' },
        },
      });
      expect(queues.access.keys).toEqual(['ns/acc']);
      expect(queues.share.keys).toEqual([]);
    } finally {
      await stop();
    }
  });

  it('a deleted Share wakes the Share that wanted its token', async () => {
    const { live, queues, clear, stop } = await setUp();
    try {
      const first = share('first', { token: 'same' }, '2', { token: 'same' });
      live.shares.push({ type: 'ADDED', object: first });
      live.shares.push({ type: 'ADDED', object: share('second', { token: 'same' }, '3') });
      live.shares.push({ type: 'ADDED', object: share('third', { token: 'other' }, '4') });
      clear();
      live.shares.push({ type: 'DELETED', object: first });
      expect(queues.share.keys).toEqual(['ns/second']);
      expect(queues.auth.keys).toEqual([]);
    } finally {
      await stop();
    }
  });

  it('children wake their owners; the installation Secret is parsed first, then wakes every Share and the auth config', async () => {
    const { live, queues, installation, clear, stop } = await setUp();
    try {
      live.shares.push({ type: 'ADDED', object: share('s', {}) });
      clear();
      const owned = (name: string, kind: string) => ({
        metadata: meta(name, {
          ownerReferences: [{ apiVersion: 'v', kind, name: 'owner', uid: 'u', controller: true }],
        }),
      });
      live.deployments.push({ type: 'ADDED', object: owned('d1', 'Share') });
      live.services.push({ type: 'ADDED', object: owned('s1', 'Access') });
      live.secrets.push({ type: 'ADDED', object: owned('x1', 'AgentEnrollment') });
      live.ingresses.push({ type: 'ADDED', object: owned('i1', 'Access') });
      expect(queues.share.keys).toEqual(['ns/owner']);
      expect(queues.access.keys).toEqual(['ns/owner']);
      expect(queues.enrollment.keys).toEqual(['ns/owner']);
      clear();
      let seen: unknown;
      live.frontendSecret.informer.on({ onAdd: () => (seen = installation.current()) });
      live.frontendSecret.push({ type: 'ADDED', object: { metadata: meta('fe'), data: {} } });
      expect(seen).toEqual({
        ok: false,
        problems: [{ path: '', code: 'required', message: 'key oauth.yaml is missing' }],
      });
      expect(queues.share.keys).toEqual(['ns/s']);
      expect(queues.auth.keys).toEqual([AUTH_CONFIG_KEY]);
    } finally {
      await stop();
    }
  });
});
