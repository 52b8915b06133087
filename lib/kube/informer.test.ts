import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../logger.ts';
import { Informer, type ListWatchSource } from './informer.ts';
import { KubeApiError } from './client.ts';
import type { KubeList, KubeObject, WatchEvent } from './resources.ts';

const logger = createLogger('test', { destination: new Writable({ write: (_c, _e, cb) => cb() }) });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function obj(name: string, rv: string): KubeObject {
  return { metadata: { name, namespace: 'ns', resourceVersion: rv } };
}

type Step =
  | { kind: 'list'; result: KubeList<KubeObject> | Error }
  | { kind: 'watch'; events: WatchEvent[]; end: 'close' | Error };

/**
 * A scripted list/watch source: the informer's reaction to each API answer (relist on Gone,
 * resume from the last resourceVersion, back off on errors) is pure logic, tested here; the
 * integration tests run it against a real kube-apiserver.
 */
function scripted(steps: Step[]): {
  source: ListWatchSource;
  calls: { kind: string; query: Record<string, unknown>; at: number }[];
} {
  const calls: { kind: string; query: Record<string, unknown>; at: number }[] = [];
  const source: ListWatchSource = {
    list: async (query) => {
      calls.push({ kind: 'list', query, at: Date.now() });
      await sleep(0);
      const step = steps.shift();
      if (!step || step.kind !== 'list') throw new Error(`unexpected list (next step ${step?.kind})`);
      if (step.result instanceof Error) throw step.result;
      return step.result;
    },
    watch: async (query, onEvent, signal) => {
      calls.push({ kind: 'watch', query, at: Date.now() });
      const step = steps.shift();
      if (!step) {
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        throw new Error('aborted');
      }
      if (step.kind !== 'watch') throw new Error('unexpected watch');
      await sleep(5);
      for (const e of step.events) onEvent(e);
      if (step.end instanceof Error) throw step.end;
    },
  };
  return { source, calls };
}

async function until(check: () => boolean, timeoutMs = 3000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not reached');
    await sleep(2);
  }
}

describe('Informer', () => {
  it('lists, watches from the list resourceVersion and resumes from the last event', async () => {
    const { source, calls } = scripted([
      { kind: 'list', result: { metadata: { resourceVersion: '10' }, items: [obj('a', '5')] } },
      {
        kind: 'watch',
        events: [
          { type: 'ADDED', object: obj('b', '11') },
          { type: 'BOOKMARK', object: obj('', '15') },
        ],
        end: 'close',
      },
    ]);
    const added: string[] = [];
    const inf = new Informer({ name: 't', source, logger });
    inf.on({ onAdd: (o) => added.push(o.metadata.name) });
    inf.start();
    await until(() => calls.length === 3);
    expect(added).toEqual(['a', 'b']);
    expect(inf.hasSynced).toBe(true);
    expect(calls[1]?.query.resourceVersion).toBe('10');
    expect(calls[1]?.query.allowWatchBookmarks).toBe(true);
    expect(calls[2]?.kind).toBe('watch');
    expect(calls[2]?.query.resourceVersion).toBe('15');
    await inf.stop();
  });

  it('relists after 410 Gone and delivers the differences', async () => {
    const { source, calls } = scripted([
      { kind: 'list', result: { metadata: { resourceVersion: '10' }, items: [obj('a', '5'), obj('b', '6')] } },
      {
        kind: 'watch',
        events: [
          { type: 'ERROR', object: { metadata: { name: '' }, code: 410, reason: 'Expired', message: 'too old' } },
        ],
        end: 'close',
      },
      { kind: 'list', result: { metadata: { resourceVersion: '30' }, items: [obj('a', '20'), obj('c', '21')] } },
    ]);
    const seen: string[] = [];
    const restarts: string[] = [];
    const inf = new Informer({
      name: 't',
      source,
      logger,
      backoff: { baseMs: 10, maxMs: 10 },
      onRestart: (r) => restarts.push(r),
    });
    inf.on({
      onAdd: (o) => seen.push(`add ${o.metadata.name}`),
      onUpdate: (_o, n) => seen.push(`update ${n.metadata.name}`),
      onDelete: (o) => seen.push(`delete ${o.metadata.name}`),
    });
    inf.start();
    await until(() => calls.length === 4);
    expect(restarts).toEqual(['gone']);
    expect(seen).toEqual(['add a', 'add b', 'delete b', 'update a', 'add c']);
    expect(calls[3]?.query.resourceVersion).toBe('30');
    expect(
      inf
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['a', 'c']);
    await inf.stop();
  });

  it('backs off with growing delays on repeated errors instead of looping', async () => {
    const down = new KubeApiError(0, 'Unreachable', 'connect ECONNREFUSED');
    const { source, calls } = scripted([
      { kind: 'list', result: down },
      { kind: 'list', result: down },
      { kind: 'list', result: down },
      { kind: 'list', result: down },
      { kind: 'list', result: { metadata: { resourceVersion: '1' }, items: [] } },
    ]);
    const inf = new Informer({ name: 't', source, logger, backoff: { baseMs: 20, maxMs: 1000 }, random: () => 1 });
    inf.start();
    await until(() => calls.length === 6);
    const gaps = calls.slice(1, 5).map((c, i) => c.at - (calls[i]?.at ?? 0));
    expect(gaps[0]).toBeGreaterThanOrEqual(18);
    expect(gaps[1]).toBeGreaterThanOrEqual(38);
    expect(gaps[2]).toBeGreaterThanOrEqual(78);
    expect(gaps[3]).toBeGreaterThanOrEqual(150);
    expect(inf.hasSynced).toBe(true);
    await inf.stop();
  });

  it('treats a watch that closes at once without events as a failure (no tight loop)', async () => {
    const { source, calls } = scripted([
      { kind: 'list', result: { metadata: { resourceVersion: '1' }, items: [] } },
      { kind: 'watch', events: [], end: 'close' },
      { kind: 'watch', events: [], end: 'close' },
    ]);
    const inf = new Informer({ name: 't', source, logger, backoff: { baseMs: 50, maxMs: 1000 }, random: () => 1 });
    inf.start();
    await until(() => calls.length === 4);
    expect((calls[2]?.at ?? 0) - (calls[1]?.at ?? 0)).toBeGreaterThanOrEqual(45);
    expect((calls[3]?.at ?? 0) - (calls[2]?.at ?? 0)).toBeGreaterThanOrEqual(95);
    await inf.stop();
  });

  it('keeps running when a handler throws', async () => {
    const { source, calls } = scripted([
      { kind: 'list', result: { metadata: { resourceVersion: '1' }, items: [obj('a', '1'), obj('b', '1')] } },
    ]);
    const inf = new Informer({ name: 't', source, logger });
    inf.on({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    inf.start();
    await until(() => calls.length === 2);
    expect(inf.size).toBe(2);
    await inf.stop();
  });
});
