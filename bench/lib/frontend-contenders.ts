import { join } from 'node:path';
import { startBackend, type Backend } from './backend.ts';
import { startExtraFrontends, type ExtraFrontend } from './extra-frontend.ts';
import { DOMAIN, frontendLogin, startDevIdp, startFrontendProcess, type Startup } from './frontend-process.ts';
import type { FrontendBenchSettings } from './frontend-settings.ts';
import { imageEnvironment, imageNodeFlags } from './image.ts';
import { checkTarget, type Target } from './measure.ts';
import type { MemoryLimits } from './memory-limit.ts';
import { startNginxProxy, type NginxProxy } from './nginx.ts';
import { startPeers } from './oauth2-proxy-peers.ts';
import { freePort } from './ports.ts';
import type { ProxyPath } from './proxy-paths.ts';
import { startModule, type BenchProcess } from './processes.ts';

/** The backend's body: small, so the proxies' own work is what the figures show. */
export const BODY_BYTES = 64;
/** The contender the frontend's targets are about: one frontend process, a logged-in visitor. */
export const OAUTH_SHARE = 'frontend, OAuth share (authenticated)';
/** An open share recorded by the agent's request inspector, in a frontend of its own (bench/lib/inspected-frontend.ts). */
export const INSPECTED = 'frontend, open share, inspector on';
/** Node's floor: a proxy that moves bytes and does nothing of HTTP (bench/lib/proxy-paths.ts `relay`). */
export const RELAY = 'Node byte relay (no HTTP: the floor of Node sockets)';

/** Where the contenders of one run live: the checkout, its scratch dir, the memory cgroups of the Node proxies. */
export interface ContenderPlace {
  readonly root: string;
  readonly dir: string;
  readonly memoryLimits: MemoryLimits;
}

/** The servers of one `bench:frontend` run, each in its own process, and the targets the load goes to. */
export interface FrontendContenders {
  readonly backend: Backend;
  /** The deployed frontend: one process serving the open and the OAuth share. */
  readonly frontend: BenchProcess<true>;
  readonly startup: Startup;
  /** The deployed frontend's Prometheus listener. */
  readonly metricsPort: number;
  readonly extras: readonly ExtraFrontend[];
  /** In the report's order: direct first (the baseline of the ratios), the frontend's OAuth share last. */
  readonly targets: readonly Target[];
}

type Ready = BenchProcess<{ url: string }>;

/** A bench/lib module answering on `ready.url`, run as the image runs Node, in a memory cgroup of its own. */
function startNodeProxy(
  place: ContenderPlace,
  name: string,
  file: string,
  exported: string,
  args: object,
): Promise<Ready> {
  return startModule<{ url: string }>(name, join(place.root, file), exported, args, undefined, {
    memoryLimit: place.memoryLimits.next(),
    env: imageEnvironment(),
    nodeFlags: imageNodeFlags(),
  });
}

/** The bare pipes, the floors of a Node proxy: object headers, header lists, and bytes without HTTP. */
async function startBarePipes(place: ContenderPlace, upstream: URL): Promise<[Ready, Ready, Ready]> {
  const start = (path: ProxyPath): Promise<Ready> =>
    startNodeProxy(place, `bare proxy (${path})`, 'bench/lib/proxy-paths.ts', 'startProxyPath', {
      path,
      upstream: upstream.href,
    });
  return [await start('lean'), await start('lean-lists'), await start('relay')];
}

/** A target whose proxy and memory are those of the processes `pids` names. */
function target(name: string, url: string, headers: Record<string, string>, pids: () => number[]): Target {
  return { name, url, headers, proxyPids: pids, memoryPids: pids };
}

/** The references: the backend direct, nginx, and the bare pipes. */
function referenceTargets(backend: URL, nginx: NginxProxy, nginxPort: number, pipes: readonly Ready[]): Target[] {
  const [bare, bareLists, relay] = pipes as [Ready, Ready, Ready];
  const nginxPids = (): number[] => [nginx.process.pid, nginx.workerPid()].filter((p) => p !== undefined);
  return [
    { name: 'direct (backend)', url: backend.href, headers: {}, proxyPids: () => [] },
    {
      name: 'nginx → backend',
      url: `http://127.0.0.1:${nginxPort}/`,
      headers: { host: `open.${DOMAIN}` },
      proxyPids: nginxPids,
      memoryPids: () => [nginx.workerPid()].filter((p) => p !== undefined),
    },
    target('bare http.request proxy (no routing, no login)', bare.ready.url, {}, () => [bare.pid]),
    target('bare pipe with header lists', bareLists.ready.url, {}, () => [bareLists.pid]),
    target(RELAY, relay.ready.url, {}, () => [relay.pid]),
  ];
}

/** The deployed frontend's open and OAuth shares, and the inspected frontend's open share. */
function frontendTargets(port: number, frontend: BenchProcess<true>, inspected: Ready, cookie: string): Target[] {
  const host = (token: string): string => `${token}.${DOMAIN}:${port}`;
  const pids = (): number[] => [frontend.pid];
  return [
    target('frontend, open share', `http://127.0.0.1:${port}/`, { host: host('open') }, pids),
    target(INSPECTED, inspected.ready.url, { host: `inspected.${DOMAIN}` }, () => [inspected.pid]),
    target(OAUTH_SHARE, `http://127.0.0.1:${port}/`, { host: host('login'), cookie }, pids),
  ];
}

/**
 * Every server of the run in its own process — the backend, the development provider, the
 * frontend as deployed (and the extra ones the settings ask for), the inspected frontend, nginx, the
 * bare pipes and oauth2-proxy — with a real login where a contender needs one, each target checked
 * to answer before any load.
 */
export async function startContenders(s: FrontendBenchSettings, place: ContenderPlace): Promise<FrontendContenders> {
  const variantPorts = await Promise.all(s.variants.map(() => freePort()));
  const [backend, idp, frontendPort, metricsPort, nginxPort, baselinePort, workersPort, ...peerPorts] =
    await Promise.all([
      startBackend(s.backend, place.dir, BODY_BYTES),
      startDevIdp(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
      freePort(),
    ]);
  const backendUrl = new URL(backend.url);
  const inspected = await startNodeProxy(
    place,
    'inspected frontend',
    'bench/lib/inspected-frontend.ts',
    'startInspectedFrontend',
    { upstream: backendUrl.href, port: 0, domain: DOMAIN },
  );
  const common = { dir: place.dir, backend: backendUrl, idp: idp.ready, memoryLimits: place.memoryLimits };
  const { frontend, startup } = await startFrontendProcess({
    ...common,
    root: place.root,
    port: frontendPort,
    metricsPort,
  });
  const nginx = await startNginxProxy({ dir: join(place.dir, 'nginx'), port: nginxPort, upstream: backendUrl });
  const pipes = await startBarePipes(place, backendUrl);
  const cookie = await frontendLogin(new URL(`http://login.${DOMAIN}:${frontendPort}/`), idp.ready.issuer);
  const ports = { baseline: baselinePort, workers: workersPort, variants: variantPorts };
  const extras = await startExtraFrontends(s, place.root, common, ports);
  const peers = await startPeers(backendUrl, idp.ready, peerPorts);
  const targets: Target[] = [
    ...referenceTargets(backendUrl, nginx, nginxPort, pipes),
    ...peers,
    ...extras.map((e) => e.target),
    ...frontendTargets(frontendPort, frontend, inspected, cookie),
  ];
  for (const t of targets) await checkTarget(t);
  return { backend, frontend, startup, metricsPort, extras, targets };
}
