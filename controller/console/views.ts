import { errorText } from '../../lib/errors.ts';
import type { ShareTraffic, TrafficMinute } from '../../lib/share/traffic.ts';
import type { PresenceSource } from '../../lib/tunnel/presence.ts';
import type { PublishedShare } from '../../lib/tunnel/directory.ts';
import type { Operation } from '../operations/context.ts';
import type { RemotingHub } from '../remoting-hub.ts';
import type { ShareRegistry } from '../share-registry.ts';
import type { AccountRecord, ControllerStore, EnvironmentRecord } from '../store.ts';

/** One frontend replica and the environments whose tunnels it holds. */
export interface ReplicaView {
  readonly name: string;
  readonly environments: readonly string[];
}

/** Where the console reads what it shows. Everything but the store is optional (absent: not shown). */
export interface ConsoleSources {
  readonly store: ControllerStore;
  readonly registry?: ShareRegistry;
  readonly traffic?: ShareTraffic;
  readonly presence?: PresenceSource;
  readonly hub?: RemotingHub;
  /** The frontend replicas and the tunnels each holds (admin view). */
  readonly replicas?: () => Promise<ReplicaView[]>;
  /** The API operations (controller/operations): `/agent/status` gives a connected agent's targets and accesses. */
  readonly operations: ReadonlyMap<string, Operation>;
}

export interface AgentShare {
  readonly token: string;
  readonly shareMode: string;
  readonly backendMode: string;
  readonly backendEndpoint: string;
  readonly frontendEndpoints: readonly string[];
}

export interface AgentAccess {
  readonly token: string;
  readonly shareToken: string;
  readonly bindAddress: string;
  readonly endpoint: string;
}

export interface ShareView {
  readonly token: string;
  readonly shareMode: string;
  readonly backendMode: string;
  readonly oauthProvider?: string;
  /** From the agent when it answered. */
  readonly target?: string;
  readonly url?: string;
  readonly traffic: readonly TrafficMinute[];
}

export interface EnvironmentView {
  readonly record: EnvironmentRecord;
  readonly online: boolean;
  readonly lastSeen?: number;
  readonly agentVersion?: string;
  /** Remote control: enrolled and its agent connected to this controller. */
  readonly enrolled: boolean;
  readonly remote: boolean;
  readonly shares: readonly ShareView[];
  readonly accesses: readonly AgentAccess[];
  /** Why the agent's own view (targets, accesses) is missing, when it is. */
  readonly agentProblem?: string;
}

/** The account's environments with their shares, accesses and traffic: only this account's. */
export async function accountView(sources: ConsoleSources, account: AccountRecord): Promise<EnvironmentView[]> {
  const environments = await sources.store.listEnvironments(account.id);
  const registered = (sources.registry?.snapshot().shares ?? []).filter((s) => s.accountId === account.id);
  return Promise.all(environments.map((env) => environmentView(sources, account, env, registered)));
}

async function environmentView(
  sources: ConsoleSources,
  account: AccountRecord,
  env: EnvironmentRecord,
  registered: readonly PublishedShare[],
): Promise<EnvironmentView> {
  const presence = sources.presence?.of(env.envZId);
  const enrolled = Boolean(await sources.store.getEnrollmentByEnvironment(env.envZId));
  const remote = enrolled && Boolean(sources.hub?.isConnected(env.envZId));
  let agent: { shares: AgentShare[]; accesses: AgentAccess[] } | undefined;
  let agentProblem: string | undefined;
  if (remote) {
    try {
      const status = (await sources.operations.get('/agent/status')?.handle(account, { envZId: env.envZId })) as {
        shares: AgentShare[] | null;
        accesses: AgentAccess[] | null;
      };
      agent = { shares: status.shares ?? [], accesses: status.accesses ?? [] };
    } catch (err) {
      agentProblem = errorText(err);
    }
  } else
    agentProblem = enrolled ? 'the agent is not connected for remote commands' : 'not enrolled for remote commands';
  const tokens = new Set([
    ...registered.filter((s) => s.envZId === env.envZId).map((s) => s.token),
    ...(agent?.shares.map((s) => s.token) ?? []),
  ]);
  const shares = [...tokens].sort().map((token) => {
    const published = registered.find((s) => s.token === token);
    const local = agent?.shares.find((s) => s.token === token);
    return {
      token,
      shareMode: published?.shareMode ?? local?.shareMode ?? '',
      backendMode: published?.backendMode ?? local?.backendMode ?? '',
      ...(published?.oauth ? { oauthProvider: published.oauth.provider } : {}),
      ...(local ? { target: local.backendEndpoint } : {}),
      ...(local?.frontendEndpoints[0] ? { url: local.frontendEndpoints[0] } : {}),
      traffic: sources.traffic?.lastHour(token) ?? [],
    };
  });
  return {
    record: env,
    online: Boolean(presence?.online) || remote,
    ...(presence ? { lastSeen: presence.lastSeen } : {}),
    ...(presence?.agentVersion ? { agentVersion: presence.agentVersion } : {}),
    enrolled,
    remote,
    shares,
    accesses: agent?.accesses ?? [],
    ...(agentProblem ? { agentProblem } : {}),
  };
}

export interface AdminView {
  readonly accounts: readonly {
    readonly account: AccountRecord;
    readonly environments: readonly { record: EnvironmentRecord; online: boolean; shares: number }[];
  }[];
  readonly replicas: readonly ReplicaView[];
}

/** Every account, its environments and share counts, and the frontend replicas: for admins only. */
export async function adminView(sources: ConsoleSources): Promise<AdminView> {
  const shares = sources.registry?.snapshot().shares ?? [];
  const accounts = await Promise.all(
    (await sources.store.listAccounts()).map(async (account) => ({
      account,
      environments: (await sources.store.listEnvironments(account.id)).map((record) => ({
        record,
        online:
          Boolean(sources.presence?.of(record.envZId)?.online) || Boolean(sources.hub?.isConnected(record.envZId)),
        shares: shares.filter((s) => s.envZId === record.envZId).length,
      })),
    })),
  );
  return { accounts, replicas: (await sources.replicas?.()) ?? [] };
}
