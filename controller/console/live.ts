import type { IncomingMessage, ServerResponse } from 'node:http';
import { trafficTotals } from '../../lib/share/traffic.ts';
import type { AccountRecord } from '../store.ts';
import { trafficChart, trafficSummary } from './chart.ts';
import type { ConsoleSources } from './views.ts';
import { openEventStream } from './web/sse.ts';

/** How often the stream sends the account's traffic and environment states. */
export const LIVE_INTERVAL_MS = 5_000;

/** One update: each of the account's registered shares' chart and summary, each environment's state. */
export async function liveSnapshot(sources: ConsoleSources, account: AccountRecord): Promise<object> {
  const environments = await sources.store.listEnvironments(account.id);
  const shares = (sources.registry?.snapshot().shares ?? []).filter((s) => s.accountId === account.id);
  return {
    shares: Object.fromEntries(
      shares.map((s) => {
        const minutes = sources.traffic?.lastHour(s.token) ?? [];
        return [s.token, { svg: trafficChart(minutes).text, summary: trafficSummary(trafficTotals(minutes)) }];
      }),
    ),
    environments: Object.fromEntries(
      environments.map((e) => {
        const presence = sources.presence?.of(e.envZId);
        const online = Boolean(presence?.online) || Boolean(sources.hub?.isConnected(e.envZId));
        return [e.envZId, { online, lastSeen: presence ? new Date(presence.lastSeen).toISOString() : undefined }];
      }),
    ),
  };
}

/**
 * `/console/events`: server-sent events with the account's live figures, one `update` at once and
 * then every LIVE_INTERVAL_MS while the page is open. Only the signed-in account's shares and
 * environments are ever in it.
 */
export async function liveUpdates(
  req: IncomingMessage,
  res: ServerResponse,
  sources: ConsoleSources,
  account: AccountRecord | undefined,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const stream = openEventStream(req, res, () => clearTimeout(timer));
  if (!account) return;
  const tick = async () => {
    try {
      stream.send('update', await liveSnapshot(sources, account));
    } catch {
      // The store did not answer this time: the page keeps its last figures until the next tick.
    }
    if (!res.writableEnded && !res.destroyed) timer = setTimeout(() => void tick(), LIVE_INTERVAL_MS);
  };
  await tick();
}
