import { readFile } from 'node:fs/promises';
import { ApiextensionsV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { serverSideApply } from './raw.ts';

/** Every non-empty YAML document in `path`, parsed. */
export async function readManifests(path: string): Promise<KubernetesObject[]> {
  const docs = parseAllDocuments(await readFile(path, 'utf8'));
  return docs.map((d) => d.toJS() as KubernetesObject | null).filter((d): d is KubernetesObject => d !== null);
}

/**
 * Server-side applies the CRDs in `paths` (field manager `svc-envtest`) and waits until each one is
 * `Established` (its REST endpoints are served) — what `kubectl apply -f crds/` and
 * `kubectl wait --for condition=established` do.
 */
export async function applyCrds(kubeConfig: KubeConfig, paths: string[], timeoutMs = 60_000): Promise<string[]> {
  const ext = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const names: string[] = [];
  for (const path of paths) {
    for (const manifest of await readManifests(path)) {
      if (manifest.kind !== 'CustomResourceDefinition') throw new Error(`${path}: not a CustomResourceDefinition`);
      await serverSideApply(kubeConfig, manifest);
      names.push(manifest.metadata?.name ?? '');
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await ext.readCustomResourceDefinition({ name });
      const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
      if (established) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return names;
}
