/**
 * TLS of share hosts on a real API server: without TLS the share's URL says http and its `TLS`
 * condition says it is not configured; an operator restarted with `--ingress-tls per-host` gives
 * the same Share's Ingress a `tls` entry naming `svc-share-<name>-tls` and an https URL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from './envtest.ts';
import {
  DOMAIN,
  api,
  condition,
  createShare,
  eventually,
  getOrNone,
  paths,
  startCluster,
  startTestOperator,
  type TestOperator,
} from './operator-fixture.ts';

let cp: ControlPlane;
let operator: TestOperator | undefined;

beforeAll(async () => {
  cp = await startCluster();
}, 120_000);

afterAll(async () => {
  await operator?.close();
  await cp?.stop();
});

/** The Share once its status shows the URL scheme `scheme`. */
async function shareWith(scheme: string): Promise<NonNullable<Awaited<ReturnType<typeof getOrNone>>>> {
  return await eventually(async () => {
    const share = await getOrNone(cp, paths.share('docs'));
    const url = (share?.status?.frontendEndpoints as string[] | undefined)?.[0] ?? '';
    return url.startsWith(`${scheme}://`) ? share : undefined;
  }, `the Share's URL in ${scheme}`);
}

describe('share TLS', () => {
  it('says http and TLS=False without TLS, then https and the per-host Secret once configured', async () => {
    operator = await startTestOperator(cp);
    await createShare(cp, 'docs', { backendMode: 'proxy', target: 'http://docs.default.svc', token: 'docs1' });
    const plain = await shareWith('http');
    expect(plain.status?.frontendEndpoints).toEqual([`http://docs1.${DOMAIN}:8443`]);
    expect(condition(plain, 'TLS')).toMatchObject({ status: 'False', reason: 'TLSNotConfigured' });
    expect((await api(cp, paths.ingress('svc-share-docs'))).spec?.tls).toBeUndefined();

    await operator.close();
    operator = await startTestOperator(cp, {
      ingress: { annotations: { 'cert-manager.io/cluster-issuer': 'le' }, tls: { mode: 'perHost' } },
    });
    const secure = await shareWith('https');
    expect(secure.status?.frontendEndpoints).toEqual([`https://docs1.${DOMAIN}:8443`]);
    expect(condition(secure, 'TLS')).toMatchObject({ status: 'True', reason: 'TLSConfigured' });
    const ingress = await eventually(async () => {
      const found = await api(cp, paths.ingress('svc-share-docs'));
      return found.spec?.tls ? found : undefined;
    }, 'the Ingress with tls');
    expect(ingress.spec?.tls).toEqual([{ hosts: [`docs1.${DOMAIN}`], secretName: 'svc-share-docs-tls' }]);
    expect((ingress.metadata as { annotations?: Record<string, string> }).annotations).toMatchObject({
      'cert-manager.io/cluster-issuer': 'le',
    });
  }, 60_000);
});
