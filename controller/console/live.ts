import type { IncomingMessage, ServerResponse } from 'node:http';
import { trafficTotals } from '../../lib/share/traffic.ts';
import type { AccountRecord } from '../store.ts';
import { trafficChart, trafficSummary } from './chart.ts';
import type { ConsoleSources } from './views.ts';
import { SseHub, type SseLimits } from '../../lib/web/sse.ts';

/**
 * Live streams of the console: every account of the installation shares the hub, so each account
 * may hold only a few (its tabs), and a stream's unsent backlog stays small (updates are a few KB).
 */
export const CONSOLE_SSE_LIMITS: SseLimits = {
  maxClients: 512,
  maxClientsPerTopic: 4,
  maxBufferedBytes: 64 * 1024,
  heartbeatMs: 15_000,
};

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
 * `/console/events`: server-sent events (the kit's SseHub, bounded per client) with each listening
 * account's live figures, sent at once to a new stream and then every LIVE_INTERVAL_MS. Each account
 * listens on its own topic, so a stream only ever carries the signed-in account's shares and
 * environments.
 */
export class LiveUpdates {
  private readonly hub = new SseHub(CONSOLE_SSE_LIMITS);
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly sources: ConsoleSources;
  private readonly timer: NodeJS.Timeout;

  constructor(sources: ConsoleSources) {
    this.sources = sources;
    this.timer = setInterval(() => void this.tick(), LIVE_INTERVAL_MS);
    this.timer.unref();
  }

  async attach(req: IncomingMessage, res: ServerResponse, account: AccountRecord): Promise<void> {
    const topic = topicOf(account);
    this.hub.attach(req, res, topic);
    if (!this.hub.listening(topic)) return;
    this.accounts.set(account.id, account);
    await this.send(account);
  }

  close(): void {
    clearInterval(this.timer);
    this.hub.close();
  }

  private async tick(): Promise<void> {
    for (const account of this.accounts.values()) {
      if (!this.hub.listening(topicOf(account))) this.accounts.delete(account.id);
      else await this.send(account);
    }
  }

  private async send(account: AccountRecord): Promise<void> {
    try {
      this.hub.publish(topicOf(account), 'update', await liveSnapshot(this.sources, account));
    } catch {
      // The store did not answer this time: the pages keep their last figures until the next tick.
    }
  }
}

const topicOf = (account: AccountRecord) => `account:${account.id}`;
