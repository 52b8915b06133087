import { request, type RequestOptions } from 'node:https';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';

export interface RawOptions {
  method?: string;
  accept?: string;
  contentType?: string;
  body?: unknown;
}

/** An API error with the server's status code and `Status.message`. */
export class ApiError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * One request to the API server with the kubeconfig's credentials, sending and returning plain JSON.
 * The typed client's model serializer drops JSON-schema fields whose model names differ
 * (`default`, `x-kubernetes-validations`, ...), so manifests (CRDs above all) go through here as written.
 */
export async function rawRequest(kubeConfig: KubeConfig, path: string, options: RawOptions = {}): Promise<unknown> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const url = new URL(path, cluster.server);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { Accept: options.accept ?? 'application/json' };
  if (payload !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
  const reqOptions: RequestOptions = { method: options.method ?? 'GET', headers };
  await kubeConfig.applyToHTTPSOptions(reqOptions);
  return await new Promise((resolve, reject) => {
    const req = request(url, reqOptions, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: keep the text
        }
        if (status >= 400) {
          const message = (parsed as { message?: string } | undefined)?.message ?? text;
          reject(new ApiError(status, `${reqOptions.method} ${path}: ${status} ${message}`));
        } else resolve(parsed);
      });
    });
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

interface ApiResource {
  name: string;
  kind: string;
  namespaced: boolean;
}

/** Resolves an object's REST path (`/apis/apps/v1/namespaces/ns/deployments/name`) through discovery. */
export async function resourcePath(
  kubeConfig: KubeConfig,
  obj: KubernetesObject,
  defaultNamespace = 'default',
): Promise<string> {
  const apiVersion = obj.apiVersion ?? 'v1';
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const list = (await rawRequest(kubeConfig, base)) as { resources: ApiResource[] };
  const resource = list.resources.find((r) => r.kind === obj.kind && !r.name.includes('/'));
  if (!resource) throw new Error(`the server does not serve kind ${obj.kind} in ${apiVersion}`);
  const name = obj.metadata?.name;
  if (!name) throw new Error(`${obj.kind} without metadata.name`);
  const ns = resource.namespaced ? `/namespaces/${obj.metadata?.namespace ?? defaultNamespace}` : '';
  return `${base}${ns}/${resource.name}/${name}`;
}

export interface ApplyOptions {
  fieldManager?: string;
  /** Server-side dry run: validated and defaulted (admission included), not persisted. */
  dryRun?: boolean;
  namespace?: string;
}

/** Server-side apply (`kubectl apply --server-side --force-conflicts [--dry-run=server]`). */
export async function serverSideApply(
  kubeConfig: KubeConfig,
  obj: KubernetesObject,
  options: ApplyOptions = {},
): Promise<KubernetesObject> {
  const path = await resourcePath(kubeConfig, obj, options.namespace);
  const query = new URLSearchParams({ fieldManager: options.fieldManager ?? 'svc-envtest', force: 'true' });
  if (options.dryRun) query.set('dryRun', 'All');
  return (await rawRequest(kubeConfig, `${path}?${query.toString()}`, {
    method: 'PATCH',
    contentType: 'application/apply-patch+yaml',
    body: obj,
  })) as KubernetesObject;
}
