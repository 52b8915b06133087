/**
 * The CRD upgrade step docs/kubernetes.md documents ("Upgrading the CRDs"), on a real API server:
 * `helm install` creates the CRDs from charts/svc/crds/, `helm upgrade` never changes them, and
 * `kubectl apply --server-side --force-conflicts -f charts/svc/crds/` (the same server-side apply
 * request, made here through the API) takes over the fields Helm wrote and installs the new
 * version; without `--force-conflicts` the API server refuses it with a conflict.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { locateHelm } from './binaries.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { CHART, RELEASE, RELEASE_NS, helmRunner, type HelmRunner } from './helm-runner.ts';
import { ApiError, rawRequest } from './raw.ts';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/shares.svc.dev';
const NEW_DESCRIPTION = 'A share (next chart version).';

interface Crd {
  metadata: { name: string; managedFields?: { manager: string }[] };
  spec: { versions: { schema: { openAPIV3Schema: { description?: string } } }[] };
}

let cp: ControlPlane;
let work: string;
let runner: HelmRunner;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-crd-upgrade-'));
  runner = helmRunner(locateHelm(), work);
  cp = await startControlPlane();
  await runner.install(cp.kubeconfigPath, '--set', 'shareDomain=share.example.com');
}, 120_000);

afterAll(async () => {
  await cp?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The chart's Share CRD as the next chart version would ship it (one description changed). */
async function nextShareCrd(): Promise<Crd> {
  const crd = parseYaml(await readFile(join(CHART, 'crds', 'svc.dev_shares.yaml'), 'utf8')) as Crd;
  crd.spec.versions[0]!.schema.openAPIV3Schema.description = NEW_DESCRIPTION;
  return crd;
}

/** What `kubectl apply --server-side [--force-conflicts]` sends for one file. */
async function kubectlApply(crd: Crd, forceConflicts: boolean): Promise<Crd> {
  const query = new URLSearchParams({ fieldManager: 'kubectl', ...(forceConflicts ? { force: 'true' } : {}) });
  return (await rawRequest(cp.kubeConfig, `${CRD_PATH}?${query.toString()}`, {
    method: 'PATCH',
    contentType: 'application/apply-patch+yaml',
    body: crd,
  })) as Crd;
}

const description = async (): Promise<string | undefined> =>
  ((await rawRequest(cp.kubeConfig, CRD_PATH)) as Crd).spec.versions[0]!.schema.openAPIV3Schema.description;

describe('upgrading the CRDs', () => {
  it('helm upgrade leaves them as installed; a forced server-side apply installs the new version', async () => {
    const installed = await description();
    expect(installed).not.toBe(NEW_DESCRIPTION);
    const upgrade = await runner.helm(
      'upgrade',
      RELEASE,
      CHART,
      '-n',
      RELEASE_NS,
      '--set',
      'shareDomain=share.example.com',
      '--kubeconfig',
      cp.kubeconfigPath,
    );
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(await description()).toBe(installed);

    let refused: unknown;
    try {
      await kubectlApply(await nextShareCrd(), false);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe(409);
    expect(await description()).toBe(installed);

    const applied = await kubectlApply(await nextShareCrd(), true);
    expect(applied.spec.versions[0]!.schema.openAPIV3Schema.description).toBe(NEW_DESCRIPTION);
    expect(applied.metadata.managedFields?.map((m) => m.manager)).toContain('kubectl');
    expect(await description()).toBe(NEW_DESCRIPTION);
  });
});
