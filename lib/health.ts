import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Registry } from './prometheus.ts';
import { closeServer, listen, portOf, type ListenAddress } from './listen.ts';
import { createServer } from './node-http.ts';

export interface Readiness {
  readonly ok: boolean;
  /** The `/readyz` body: why not ready, or what "ready" means here (`ok: standing by`). */
  readonly detail: string;
}

export interface HealthRoutes {
  /**
   * `/healthz`: 503 with the detail when the process is alive but wedged (a work loop that makes no
   * progress), so the kubelet restarts it; without it `/healthz` always answers 200.
   */
  readonly live?: () => Readiness;
  /** `/readyz`; without it only `/healthz` is served. */
  readonly ready?: () => Readiness;
  /** Prometheus `/metrics`; without it `/metrics` is not served. */
  readonly registry?: Registry;
  /** Called for every probe answered (the frontend counts them). */
  readonly onProbe?: () => void;
}

const TEXT = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' };

/**
 * Answers `/healthz` (the process is up and, with `live`, not wedged: 200, else 503 with the detail),
 * `/readyz` (200 or 503 with the detail) and
 * `/metrics` by exact path, GET or HEAD only. Returns false for any other request, which the
 * caller routes on (a listener that serves more than health, or a 404).
 */
export function answerHealth(req: IncomingMessage, res: ServerResponse, routes: HealthRoutes): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/healthz') {
    routes.onProbe?.();
    const state = routes.live?.() ?? { ok: true, detail: 'ok' };
    res.writeHead(state.ok ? 200 : 503, TEXT).end(`${state.detail}\n`);
  } else if (path === '/readyz' && routes.ready) {
    routes.onProbe?.();
    const state = routes.ready();
    res.writeHead(state.ok ? 200 : 503, TEXT).end(`${state.detail}\n`);
  } else if (path === '/metrics' && routes.registry) {
    const registry = routes.registry;
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, TEXT).end('metrics could not be collected\n'),
    );
  } else {
    return false;
  }
  return true;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A listener of its own for probes and metrics (the operator's `--metrics-listen`, the frontend's
 * `metrics_address`, the environment agent's `--health-listen`): kubelets and Prometheus reach it
 * on the pod IP, apart from the traffic the process serves.
 */
export async function startHealthServer(
  address: ListenAddress,
  routes: HealthRoutes,
  label?: string,
): Promise<HealthServer> {
  const served = ['/healthz', ...(routes.ready ? ['/readyz'] : []), ...(routes.registry ? ['/metrics'] : [])];
  const server: Server = createServer((req, res) => {
    if (answerHealth(req, res, routes)) return;
    if (req.method !== 'GET' && req.method !== 'HEAD') res.writeHead(405, { ...TEXT, allow: 'GET, HEAD' }).end();
    else res.writeHead(404, TEXT).end(`not found: this listener serves ${served.join(', ')}\n`);
  });
  await listen(server, address, label);
  return { port: portOf(server), close: () => closeServer(server) };
}
