/**
 * What the cluster suite needs to look at the public frontend's replicas from outside: the agent of
 * a machine outside the cluster (a `svc serve` on this host that resolves the frontend's endpoint
 * host to the node, as a laptop's DNS would), and each replica's own counters read inside its pod.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startSvc, type Process } from '../../controller/harness.ts';
import { execIn } from './kube.ts';

/**
 * `svc serve` on this host, in a mount namespace of its own whose /etc/hosts maps `names` to
 * `address`: the frontend's endpoint host is a `*.svc.localhost` name (the OAuth cookie domain must
 * contain it), which this host's resolver does not know. Its network is the host's.
 */
export async function startOutsideAgent(dir: string, address: string, names: string[]): Promise<Process> {
  const hosts = join(dir, 'hosts');
  await writeFile(hosts, `127.0.0.1 localhost\n${address} ${names.join(' ')}\n`);
  const prefix = [
    'unshare',
    '--mount',
    '--propagation',
    'private',
    '--',
    'sh',
    '-c',
    'mount --bind "$0" /etc/hosts && exec "$@"',
    hosts,
  ];
  return await startSvc(['serve', '--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0'], /svc serve is ready/, {
    prefix,
  });
}

/** `svc_frontend_requests_total{outcome="proxied"}` of one replica, read from its metrics port inside the pod. */
export async function proxiedCount(kc: KubeConfig, namespace: string, pod: string): Promise<number> {
  const script = "fetch('http://127.0.0.1:9090/metrics').then((r) => r.text()).then((t) => process.stdout.write(t))";
  const out = await execIn(kc, namespace, pod, 'public-frontend', ['node', '-e', script]);
  if (out.code !== 0) throw new Error(`metrics of ${pod}: ${out.stderr}`);
  return Number(/^svc_frontend_requests_total\{outcome="proxied"\} (\d+)/m.exec(out.stdout)?.[1] ?? 0);
}

/** The pod's config file as the init container left it: its mode and top-level keys (never its values). */
export async function configShape(
  kc: KubeConfig,
  namespace: string,
  pod: string,
): Promise<{ mode: string; keys: string[] }> {
  const script = `const fs = require('node:fs'); const f = '/etc/svc/public-frontend.yaml';
    const keys = [...fs.readFileSync(f, 'utf8').matchAll(/^([a-z_]+):/gm)].map((m) => m[1]).sort();
    console.log(JSON.stringify({ mode: (fs.statSync(f).mode & 0o777).toString(8), keys }));`;
  const out = await execIn(kc, namespace, pod, 'public-frontend', ['node', '-e', script]);
  if (out.code !== 0) throw new Error(`config of ${pod}: ${out.stderr}`);
  return JSON.parse(out.stdout) as { mode: string; keys: string[] };
}
