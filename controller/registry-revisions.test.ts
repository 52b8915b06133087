import { describe, expect, it } from 'vitest';
import { revisionParts } from '../lib/tunnel/frontend-api.ts';
import { REVOKED_RETENTION_MS, RegistryRevisions } from './registry-revisions.ts';

describe('RegistryRevisions', () => {
  it('answers a poll at once for another revision, and holds one for the current revision until it changes', async () => {
    const revisions = new RegistryRevisions();
    const first = revisions.current;
    await revisions.changed(undefined, 60_000);
    await revisions.changed('other.0', 60_000);
    let woken = false;
    const waiting = revisions.changed(first, 60_000).then(() => (woken = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(woken).toBe(false);
    revisions.bump();
    await waiting;
    expect(revisionParts(revisions.current)).toEqual({ run: revisionParts(first)?.run, counter: 1 });
    // Unchanged: answered after the poll time; an aborted client releases its wait too.
    await revisions.changed(revisions.current, 10);
    const gone = new AbortController();
    const aborted = revisions.changed(revisions.current, 60_000, gone.signal);
    gone.abort();
    await aborted;
  });

  it('keeps revocations with their revision for the retention time, then reports from which revision the list is complete', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const revisions = new RegistryRevisions(() => now);
    expect(revisions.revoked()).toEqual({ revoked: [], revokedSince: revisions.current });
    revisions.revoke('envaaaaaaaaa');
    const firstRevision = revisions.current;
    now += REVOKED_RETENTION_MS / 2;
    revisions.bump();
    revisions.revoke('envbbbbbbbbb');
    expect(revisions.revoked().revoked.map((r) => [r.envZId, r.revision])).toEqual([
      ['envaaaaaaaaa', firstRevision],
      ['envbbbbbbbbb', revisions.current],
    ]);
    now += REVOKED_RETENTION_MS / 2 + 1;
    const later = revisions.revoked();
    expect(later.revoked.map((r) => r.envZId)).toEqual(['envbbbbbbbbb']);
    expect(later.revokedSince).toBe(firstRevision);
  });
});
