import { describe, expect, it } from 'vitest';
import type { Share } from '../lib/kube/resources.ts';
import type { InformerHandlers } from '../lib/kube/informer.ts';
import type { Installation } from './frontend-secret.ts';
import { ShareMemo } from './share-memo.ts';
import { desiredShareChildren } from './share-children.ts';
import { ShareTokens } from './share-tokens.ts';

/** The handlers a memo or index registers, for the test to call as the Share cache would. */
function shareEvents(
  initial: Share[] = [],
): { source: { on(h: InformerHandlers<Share>): void; list(): Share[] } } & Required<InformerHandlers<Share>> {
  const handlers: InformerHandlers<Share>[] = [];
  return {
    source: { on: (h) => handlers.push(h), list: () => initial },
    onAdd: (s) => handlers.forEach((h) => h.onAdd?.(s)),
    onUpdate: (o, s) => handlers.forEach((h) => h.onUpdate?.(o, s)),
    onDelete: (s) => handlers.forEach((h) => h.onDelete?.(s)),
  };
}

const share = (name: string, spec: Share['spec'], extra: Partial<Share> = {}): Share => ({
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Share',
  metadata: { name, namespace: 'ns', uid: `uid-${name}` },
  spec,
  ...extra,
});

describe('ShareMemo', () => {
  it('answers an unchanged spec from memory, and recomputes when the spec, uid or installation changes', () => {
    const events = shareEvents();
    const memo = new ShareMemo(events.source);
    const a = share('a', { backendMode: 'proxy', target: 'http://app:8080' });
    const first = memo.validate(a, undefined);
    expect(first.ok).toBe(true);
    // A status update: a new object, same spec.
    expect(memo.validate({ ...a, status: { token: 'x' } }, undefined)).toBe(first);
    const changed = memo.validate(share('a', { backendMode: 'proxy', target: 'not a url' }), undefined);
    expect(changed.ok).toBe(false);
    const recreated = memo.validate({ ...a, metadata: { ...a.metadata, uid: 'uid-other' } }, undefined);
    expect(recreated).not.toBe(first);
    expect(recreated.ok && recreated.value.token).not.toBe(first.ok && first.value.token);
    // With a generation (as from the API server) the generation stands for the spec.
    const g1 = share('g', { backendMode: 'proxy', target: 'http://app:8080' });
    g1.metadata.generation = 1;
    const atOne = memo.validate(g1, undefined);
    expect(memo.validate({ ...g1, status: { token: 'x' } }, undefined)).toBe(atOne);
    const g2 = { ...g1, metadata: { ...g1.metadata, generation: 2 }, spec: { backendMode: 'proxy', target: 'bad' } };
    expect(memo.validate(g2 as Share, undefined).ok).toBe(false);
    // Only the provider names are read for a share without OAuth.
    const other = { oauth: { providers: [] } } as unknown as Installation;
    expect(memo.validate(a, other)).not.toBe(memo.validate(a, undefined));
  });

  it('computes the children once per input and forgets a deleted Share', () => {
    const events = shareEvents();
    const memo = new ShareMemo(events.source);
    const a = share('a', { backendMode: 'proxy', target: 'http://app:8080' });
    let computed = 0;
    const children = () => {
      computed++;
      const valid = memo.validate(a, undefined);
      if (!valid.ok) throw new Error('invalid');
      return desiredShareChildren(a, valid.value, { image: 'svc:test', domain: 'd' });
    };
    const one = memo.children(a, undefined, children);
    expect(memo.children({ ...a }, undefined, children)).toBe(one);
    expect(computed).toBe(1);
    events.onDelete(a);
    memo.children(a, undefined, children);
    expect(computed).toBe(2);
  });
});

describe('ShareTokens', () => {
  it('follows the Share cache: spec token over status token, moves on update, gone on delete', () => {
    const existing = share('old', { token: 't1' });
    const events = shareEvents([existing]);
    const tokens = new ShareTokens(events.source);
    expect(tokens.sharing('t1').map((s) => s.metadata.name)).toEqual(['old']);
    const b = share('b', {}, { status: { token: 't1' } });
    events.onAdd(b);
    expect(tokens.sharing('t1').map((s) => s.metadata.name)).toEqual(['old', 'b']);
    const moved = share('b', { token: 't2' }, { status: { token: 't1' } });
    events.onUpdate(b, moved);
    expect(tokens.sharing('t1').map((s) => s.metadata.name)).toEqual(['old']);
    expect(tokens.sharing('t2')).toEqual([moved]);
    events.onDelete(moved);
    expect(tokens.sharing('t2')).toEqual([]);
  });
});
