import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalApiClient } from '../../agent/client.ts';
import type { AgentStatus, ShareEntry } from '../../agent/agent.ts';
import { startServe, tempDir, type ServeProcess } from '../serve/harness.ts';
import { suiteFigures } from '../support/figures.ts';
import { echoBackend, request } from '../support/raw-http.ts';

/**
 * `svc serve` killed with SIGKILL in the middle of a burst of share creations, three times. A share
 * the local API acknowledged was written durably first, so after every restart the store opens,
 * holds every acknowledged share, and the frontend serves them all.
 */
const figures = suiteFigures('serve-crash');
let backend: Awaited<ReturnType<typeof echoBackend>>;
let dataDir: string;
let serve: ServeProcess | undefined;

beforeAll(async () => {
  backend = await echoBackend();
  dataDir = join(tempDir('svc-fault-crash-'), 'data');
});

afterAll(async () => {
  figures.write();
  await serve?.stop();
  await backend?.close();
});

describe('svc serve killed during a burst of share creations', () => {
  it('loses no acknowledged share, three kills in a row', async () => {
    const client = new LocalApiClient(dataDir);
    const acknowledged = new Set<string>();
    let refusedInFlight = 0;
    const rounds = [15, 40, 5];
    for (const [round, killAfter] of rounds.entries()) {
      serve = await startServe(dataDir);
      const running = serve;
      let inRound = 0;
      let stop = false;
      const killed = new Promise<void>((resolve) => {
        running.child.once('exit', () => resolve());
      });
      // 8 clients creating shares back to back; the process is killed once `killAfter` were acknowledged.
      const workers = Array.from({ length: 8 }, async () => {
        while (!stop) {
          try {
            const entry = await client.post<ShareEntry>('/v1/shares', {
              shareMode: 'public',
              backendMode: 'proxy',
              target: backend.url,
            });
            acknowledged.add(entry.token);
            inRound += 1;
            if (inRound === killAfter) running.child.kill('SIGKILL');
          } catch {
            refusedInFlight += 1;
            stop = true;
          }
        }
      });
      await killed;
      stop = true;
      await Promise.all(workers);
      expect(inRound, `round ${round}`).toBeGreaterThanOrEqual(killAfter);
    }

    serve = await startServe(dataDir);
    const status = await client.get<AgentStatus>('/v1/status');
    const listed = new Set((status.shares ?? []).map((s) => s.token));
    const lost = [...acknowledged].filter((t) => !listed.has(t));
    expect(lost).toEqual([]);
    const stored = JSON.parse(readFileSync(join(dataDir, 'state.json'), 'utf8')) as { shares: { token: string }[] };
    expect(new Set(stored.shares.map((s) => s.token))).toEqual(listed);
    let served = 0;
    for (const token of listed) {
      const reply = await request(serve.port, '/', { host: `${token}.svc.localhost:${serve.port}` });
      if (reply.status === 200) served += 1;
    }
    expect(served).toBe(listed.size);
    const leftovers = readdirSync(dataDir).filter((f) => f.endsWith('.tmp'));
    expect(leftovers).toEqual([]);

    figures.fault({
      fault: `svc serve SIGKILLed during a burst of share creations (${rounds.length} times, 8 concurrent clients)`,
      injections: rounds.length,
      outcome: `${acknowledged.size} shares acknowledged, all present and served after restart (${listed.size - acknowledged.size} more were stored but their answer was cut by the kill); ${refusedInFlight} requests in flight failed at the client; state.json valid every time; temporary files of killed writes removed at start (they used to stay)`,
      lost: lost.length,
    });
  }, 180_000);
});
