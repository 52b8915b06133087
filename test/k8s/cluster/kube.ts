/**
 * What the end-to-end tests do to a running cluster, through the Kubernetes API only, the way
 * kubectl would: wait for pods, exec a command in a container, read logs, and forward a local port
 * to a pod (`kubectl port-forward`: API server → kubelet → containerd → the pod's network).
 */
import { createServer, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { Exec, PortForward, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { rawRequest } from '../raw.ts';
import { until as pollUntil } from '../../support/until.ts';

export interface Pod {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec: {
    containers: {
      name: string;
      securityContext?: Record<string, unknown>;
      readinessProbe?: { httpGet?: { path?: string; port?: number | string } };
    }[];
    securityContext?: Record<string, unknown>;
  };
  status?: {
    phase?: string;
    conditions?: { type: string; status: string }[];
    podIP?: string;
    containerStatuses?: { name: string; ready: boolean; restartCount: number; state?: Record<string, unknown> }[];
    initContainerStatuses?: {
      name: string;
      state?: { terminated?: { exitCode: number; reason?: string } };
    }[];
  };
}

const isReady = (pod: Pod): boolean =>
  !pod.metadata.deletionTimestamp &&
  (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

export async function listPods(kc: KubeConfig, namespace: string, selector: string): Promise<Pod[]> {
  const q = new URLSearchParams({ labelSelector: selector });
  const list = (await rawRequest(kc, `/api/v1/namespaces/${namespace}/pods?${q.toString()}`)) as { items: Pod[] };
  return list.items;
}

/** Polls every second until `probe` returns a value; on timeout fails with the last error and `describe()`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 120_000,
  describe?: () => Promise<string>,
): Promise<T> {
  try {
    return await pollUntil(probe, what, timeoutMs, 1_000);
  } catch (err) {
    const detail = describe ? await describe().catch((e: unknown) => String(e)) : '';
    throw new Error(`${(err as Error).message}\n${detail}`, { cause: err });
  }
}

/** A short account of the pods in a namespace (phase, readiness, container states) for failure messages. */
export async function describePods(kc: KubeConfig, namespace: string, selector = ''): Promise<string> {
  const pods = await listPods(kc, namespace, selector);
  return pods
    .map((p) => {
      const containers = (p.status?.containerStatuses ?? [])
        .map((c) => `${c.name}: ready=${c.ready} restarts=${c.restartCount} ${JSON.stringify(c.state)}`)
        .join('; ');
      return `${p.metadata.namespace}/${p.metadata.name} ${p.status?.phase ?? '?'} ${containers}`;
    })
    .join('\n');
}

/** Waits until exactly `count` pods match and all are Ready; returns them. */
export async function readyPods(
  kc: KubeConfig,
  namespace: string,
  selector: string,
  count = 1,
  timeoutMs = 180_000,
): Promise<Pod[]> {
  return await until(
    `${count} Ready pod(s) ${selector} in ${namespace}`,
    async () => {
      const pods = (await listPods(kc, namespace, selector)).filter((p) => !p.metadata.deletionTimestamp);
      return pods.length === count && pods.every(isReady) ? pods : undefined;
    },
    timeoutMs,
    () => describePods(kc, namespace, selector),
  );
}

/** The container's log (`kubectl logs`). */
export async function podLog(kc: KubeConfig, namespace: string, pod: string, container: string): Promise<string> {
  return String(await rawRequest(kc, `/api/v1/namespaces/${namespace}/pods/${pod}/log?container=${container}`));
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** 0 on success, else the exit code the runtime reported. */
  code: number;
}

class Collect extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

/** Runs a command in a container (`kubectl exec`) and collects its output and exit code. */
export async function execIn(
  kc: KubeConfig,
  namespace: string,
  pod: string,
  container: string,
  command: string[],
): Promise<ExecResult> {
  const stdout = new Collect();
  const stderr = new Collect();
  return await new Promise<ExecResult>((resolve, reject) => {
    new Exec(kc)
      .exec(namespace, pod, container, command, stdout, stderr, null, false, (status: V1Status) => {
        const exit = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
        resolve({
          stdout: stdout.text,
          stderr: stderr.text,
          code: status.status === 'Success' ? 0 : Number(exit ?? 1),
        });
      })
      .then((ws) => ws.on('error', reject))
      .catch(reject);
  });
}

export interface Forward {
  port: number;
  close(): Promise<void>;
}

/**
 * `kubectl port-forward` to whichever Ready pod matches `selector` when a connection arrives:
 * listens on `host:port` (port 0 = any) and tunnels each connection to the pod's `targetPort`
 * through the API server.
 */
export async function forwardPort(
  kc: KubeConfig,
  namespace: string,
  selector: string,
  targetPort: number,
  host = '127.0.0.1',
  port = 0,
): Promise<Forward> {
  const forwarder = new PortForward(kc);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    void (async () => {
      try {
        const pods = (await listPods(kc, namespace, selector)).filter(isReady);
        const pod = pods[0];
        if (!pod) throw new Error(`no Ready pod ${selector} in ${namespace}`);
        const ws = await forwarder.portForward(namespace, pod.metadata.name, [targetPort], socket, null, socket);
        if (typeof ws === 'function') return;
        ws.on('close', () => socket.end());
        ws.on('error', () => socket.destroy());
        socket.on('close', () => ws.close());
      } catch {
        socket.destroy();
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
