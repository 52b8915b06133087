import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { rawRequest } from './raw.ts';

export const CHART = join(import.meta.dirname, '..', '..', 'charts', 'svc');
export const RELEASE = 'svc';
export const RELEASE_NS = 'svc-system';
export const KUBE_VERSION = 'v1.34.4';

export type Obj = KubernetesObject & Record<string, unknown>;
export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion and reports its exit code and output (never throws on failure). */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { env: { ...process.env, ...env }, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** An `oauth:` section the chart's schema and the operator accept (one idp1 provider, test keys). */
export const CHART_OAUTH = {
  endpoint_url: 'https://auth.share.example.com',
  cookie_name: 'svc-auth-session',
  cookie_domain: 'share.example.com',
  session_lifetime: '6h',
  intermediate_lifetime: '5m',
  signing_key: 'chart-test-signing-key-0123456789abcdef',
  encryption_key: 'chart-test-encryption-key-0123',
  providers: [{ name: 'google', type: 'idp1', client_id: 'id', client_secret: 'chart-test-client-secret' }],
};

export interface HelmRunner {
  helm(...args: string[]): Promise<Run>;
  /** `helm install` of the chart as release `svc` in `svc-system` (created); throws with helm's stderr on failure. */
  install(kubeconfigPath: string, ...args: string[]): Promise<Run>;
  /** `helm template` of the chart as release `svc` in `svc-system`; the rendered objects. */
  template(...args: string[]): Promise<Obj[]>;
}

/** helm with its state in the test's temp dir (never the user's ~/.config/helm). */
export function helmRunner(helmBin: string, work: string): HelmRunner {
  const helm = (...args: string[]): Promise<Run> =>
    run(helmBin, args, {
      HELM_CACHE_HOME: join(work, 'helm-cache'),
      HELM_CONFIG_HOME: join(work, 'helm-config'),
      HELM_DATA_HOME: join(work, 'helm-data'),
    });
  return {
    helm,
    async install(kubeconfigPath, ...args) {
      const out = await helm(
        'install',
        RELEASE,
        CHART,
        '-n',
        RELEASE_NS,
        '--create-namespace',
        ...args,
        '--kubeconfig',
        kubeconfigPath,
      );
      if (out.code !== 0) throw new Error(`helm install failed: ${out.stderr}`);
      return out;
    },
    async template(...args) {
      const out = await helm('template', RELEASE, CHART, '-n', RELEASE_NS, '--kube-version', KUBE_VERSION, ...args);
      if (out.code !== 0) throw new Error(`helm template failed: ${out.stderr}`);
      return parseAllDocuments(out.stdout)
        .map((d) => d.toJS() as Obj | null)
        .filter((d): d is Obj => d !== null);
    },
  };
}

/** The rendered object of this kind and name; throws naming what was rendered instead. */
export function findObject(objs: Obj[], kind: string, name: string): Obj {
  const obj = objs.find((o) => o.kind === kind && o.metadata?.name === name);
  if (!obj)
    throw new Error(
      `${kind} ${name} not rendered; have ${objs.map((o) => `${o.kind}/${o.metadata?.name}`).join(', ')}`,
    );
  return obj;
}

/** Whether the kubeconfig's user may do this (a SelfSubjectAccessReview: the API server's own RBAC answer). */
export async function selfCan(kubeConfig: KubeConfig, attrs: Record<string, string>): Promise<boolean> {
  const review = (await rawRequest(kubeConfig, '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    method: 'POST',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: attrs },
    },
  })) as { status: { allowed: boolean } };
  return review.status.allowed;
}
