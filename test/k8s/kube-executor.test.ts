/**
 * The environment agent's executor against a real kube-apiserver + etcd with the CRDs: the same
 * RemoteExecutor contract as the single-machine agent (test/contracts/remote-executor.ts). Refusals
 * need no operator: the executor refuses before it creates anything, so the seeded Shares are
 * written straight to the API server.
 */
import { KubeClient } from '../../lib/kube/client.ts';
import { SHARES, resourcePath, type ShareSpec } from '../../lib/kube/resources.ts';
import { createLogger } from '../../lib/logger.ts';
import { newToken } from '../../lib/token.ts';
import { kubeExecutor } from '../../agent/remoting/kube-executor.ts';
import { runExecutorContract } from '../contracts/remote-executor.ts';
import { startControlPlane } from './envtest.ts';
import { CRD_FILES } from './operator-fixture.ts';
import { rawRequest } from './raw.ts';

const NAMESPACE = 'env-contract';

runExecutorContract('kubeExecutor (environment agent, real API server)', async ({ backendUrl }) => {
  const cp = await startControlPlane({ crds: CRD_FILES });
  try {
    await rawRequest(cp.kubeConfig, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name: NAMESPACE } } });
    const client = await KubeClient.create(cp.kubeConfig);
    const create = async (name: string, spec: ShareSpec): Promise<string> => {
      const token = newToken();
      await client.create(resourcePath(SHARES, NAMESPACE), {
        apiVersion: 'svc.dev/v1alpha1',
        kind: 'Share',
        metadata: { name, namespace: NAMESPACE },
        spec: { ...spec, token },
      });
      return token;
    };
    const shares = {
      publicProxy: await create('public-proxy', { shareMode: 'public', backendMode: 'proxy', target: backendUrl }),
      privateProxy: await create('private-proxy', { shareMode: 'private', backendMode: 'proxy', target: backendUrl }),
      web: await create('web', {
        shareMode: 'public',
        backendMode: 'web',
        target: '/srv/share',
        webVolume: { configMap: 'site' },
      }),
    };
    const logger = createLogger('executor-contract', { level: 'silent' });
    return {
      executor: kubeExecutor({ client, namespace: NAMESPACE, logger }),
      shares,
      close: async () => {
        client.close();
        await cp.stop();
      },
    };
  } catch (err) {
    await cp.stop();
    throw err;
  }
});
