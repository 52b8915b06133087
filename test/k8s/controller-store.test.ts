/**
 * The controller's Kubernetes store on a real kube-apiserver + etcd: the same contract suite as the
 * embedded file store (controller/store-contract.ts), each store in a fresh namespace, and what
 * lands in the API server (Secrets labelled managed-by svc-controller, hashes only).
 */
import { readFile } from 'node:fs/promises';
import { createServer, connect, type Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeControllerStore, RECORD_LABEL } from '../../controller/kube-store.ts';
import { storeReadiness } from '../../controller/readiness.ts';
import { publicFrontendTunnel } from '../../controller/public-frontend.ts';
import { createLogger } from '../../lib/logger.ts';
import { runStoreContract } from '../contracts/controller-store.ts';
import { hashToken, newSecretToken } from '../../controller/tokens.ts';
import { startControlPlane, type ControlPlane } from './envtest.ts';
import { rawRequest } from './raw.ts';

let cp: ControlPlane;
let namespaces = 0;
const stores: KubeControllerStore[] = [];

beforeAll(async () => {
  cp = await startControlPlane();
}, 120_000);

afterAll(async () => {
  for (const s of stores) await s.close();
  await cp?.stop();
});

async function freshNamespace(): Promise<string> {
  const name = `ctl-store-${++namespaces}`;
  await rawRequest(cp.kubeConfig, '/api/v1/namespaces', { method: 'POST', body: { metadata: { name } } });
  return name;
}

async function open(namespace: string): Promise<KubeControllerStore> {
  const store = await KubeControllerStore.create(cp.kubeConfig, namespace);
  stores.push(store);
  return store;
}

runStoreContract('KubeControllerStore (real API server)', async () => {
  const namespace = await freshNamespace();
  return { store: await open(namespace), reopen: () => open(namespace) };
});

describe('KubeControllerStore objects', () => {
  type Secret = { metadata: { name: string; labels: Record<string, string> }; data: Record<string, string> };

  it('keeps every record as a labelled Secret holding token hashes only', async () => {
    const namespace = await freshNamespace();
    const store = await open(namespace);
    const account = newSecretToken('svca');
    const enrollment = newSecretToken('svce');
    await store.createAccount({ id: account.id, email: 'Ops@Example.com', tokenHash: account.hash, createdAt: 'now' });
    await store.createEnvironment({
      envZId: 'envk8saaaaaa',
      accountId: account.id,
      description: 'd',
      host: 'h',
      createdAt: 'now',
    });
    await store.createEnrollment({
      id: enrollment.id,
      envZId: 'envk8saaaaaa',
      tokenHash: enrollment.hash,
      controllerZId: 'ctlaaaaaaaaaaaaaaaa',
      createdAt: 'now',
    });
    const list = (await rawRequest(cp.kubeConfig, `/api/v1/namespaces/${namespace}/secrets`)) as { items: Secret[] };
    const mine = list.items.filter((s) => s.metadata.labels?.['app.kubernetes.io/managed-by'] === 'svc-controller');
    expect(mine.map((s) => s.metadata.labels[RECORD_LABEL]).sort()).toEqual([
      'account',
      'account-email',
      'enrollment',
      'environment',
    ]);
    // Compared by record kind: sorting names would order the random account id against the email hash.
    const nameOf = (record: string) => mine.find((s) => s.metadata.labels[RECORD_LABEL] === record)?.metadata.name;
    expect(nameOf('account')).toBe(`svc-account-${account.id}`);
    expect(nameOf('account-email')).toMatch(/^svc-account-email-[0-9a-f]{40}$/);
    expect(nameOf('enrollment')).toBe('svc-enrollment-envk8saaaaaa');
    expect(nameOf('environment')).toBe('svc-env-envk8saaaaaa');
    const everything =
      JSON.stringify(list.items.map((s) => Buffer.from(JSON.stringify(s.data)).toString())) +
      list.items
        .map((s) =>
          Object.values(s.data)
            .map((v) => Buffer.from(v, 'base64').toString())
            .join(),
        )
        .join();
    expect(everything).not.toContain(account.token);
    expect(everything).not.toContain(enrollment.token);
    expect(everything).toContain(hashToken(account.token));
    // The email itself is not in any object name or label.
    expect(JSON.stringify(mine.map((s) => s.metadata))).not.toMatch(/ops@example\.com/i);
  });

  it('an email index left without its account (a crash between the two creates) does not block the email', async () => {
    const namespace = await freshNamespace();
    const store = await open(namespace);
    await store.createAccount({
      id: 'acctcrashaaa',
      email: 'crash@example.com',
      tokenHash: 'a'.repeat(64),
      createdAt: '',
    });
    await rawRequest(cp.kubeConfig, `/api/v1/namespaces/${namespace}/secrets/svc-account-acctcrashaaa`, {
      method: 'DELETE',
    });
    expect(await store.findAccountByEmail('crash@example.com')).toBeUndefined();
    await store.createAccount({
      id: 'acctcrashbbb',
      email: 'CRASH@example.com',
      tokenHash: 'b'.repeat(64),
      createdAt: '',
    });
    expect((await store.findAccountByEmail('crash@example.com'))?.id).toBe('acctcrashbbb');
  });

  it('ids that are not DNS labels get hashed names and still round-trip', async () => {
    const store = await open(await freshNamespace());
    await store.createAccount({ id: 'Odd_ID.1', email: 'odd@example.com', tokenHash: 'c'.repeat(64), createdAt: '' });
    await store.createEnvironment({
      envZId: 'ENV_Odd',
      accountId: 'Odd_ID.1',
      description: '',
      host: '',
      createdAt: '',
    });
    expect((await store.getAccount('Odd_ID.1'))?.email).toBe('odd@example.com');
    expect((await store.listEnvironments('Odd_ID.1')).map((e) => e.envZId)).toEqual(['ENV_Odd']);
  });
});

describe('the share registry over the Kubernetes store (svc controller --store kubernetes with public_frontend)', () => {
  it('publishes, refuses another environment the token, survives a restart and forgets a disabled environment', async () => {
    const namespace = await freshNamespace();
    const store = await open(namespace);
    const logger = createLogger('t', { level: 'silent' });
    const config = {
      domain: 'share.example.com',
      endpointUrl: new URL('https://share.example.com'),
      credential: 'c'.repeat(32),
      credentialFile: '',
      providers: [],
    };
    const env = (envZId: string) => ({ envZId, accountId: 'acctk8sregaa', description: '', host: '', createdAt: '' });
    const { registry } = await publicFrontendTunnel(store, config, logger);
    const before = registry.revisions.current;
    await registry.register(env('envk8sregaaa'), { token: 'k8sshare', shareMode: 'public', backendMode: 'proxy' });
    await expect(
      registry.register(env('envk8sregbbb'), { token: 'k8sshare', shareMode: 'public', backendMode: 'proxy' }),
    ).rejects.toMatchObject({ code: 'share_token_taken', status: 409 });
    expect(registry.revisions.current).not.toBe(before);

    const restarted = (await publicFrontendTunnel(await open(namespace), config, logger)).registry;
    expect(restarted.lookup('k8sshare')).toMatchObject({ envZId: 'envk8sregaaa', shareMode: 'public' });
    await restarted.removeEnvironment('envk8sregaaa');
    expect(restarted.snapshot()).toMatchObject({ shares: [], revoked: [{ envZId: 'envk8sregaaa' }] });
    expect(await store.listRegistrations()).toEqual([]);
  });
});

describe("the controller's readiness (/readyz)", () => {
  it('is ready while the API server answers, and not once its connection is black-holed', async () => {
    // A TCP relay to the API server that can stop answering: new connections are accepted and
    // left silent, open ones are cut (the store's client then has to reconnect into the silence).
    const apiPort = Number(new URL(cp.server).port);
    let blackHoled = false;
    const open = new Set<Socket>();
    const relay = createServer((client) => {
      open.add(client);
      client.on('close', () => open.delete(client));
      client.on('error', () => client.destroy());
      if (blackHoled) return;
      const upstream = connect(apiPort, '127.0.0.1');
      upstream.on('error', () => client.destroy());
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const address = relay.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(
      (await readFile(cp.kubeconfigPath, 'utf8')).replace(cp.server, `https://127.0.0.1:${port}`),
    );
    const store = await KubeControllerStore.create(kubeConfig, await freshNamespace());
    stores.push(store);
    try {
      expect(await storeReadiness(store, 2_000)).toEqual({ ok: true, detail: 'ok' });
      blackHoled = true;
      for (const socket of open) socket.destroy();
      const down = await storeReadiness(store, 2_000);
      expect(down.ok).toBe(false);
      expect(down.detail).toMatch(/^store unreachable: /);
      blackHoled = false;
      await expect.poll(async () => (await storeReadiness(store, 2_000)).ok, { timeout: 15_000 }).toBe(true);
    } finally {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => relay.close(resolve));
    }
  });
});
