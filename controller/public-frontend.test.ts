import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/logger.ts';
import { ControllerFileStore } from './file-store.ts';
import { publicFrontendTunnel } from './public-frontend.ts';
import { newEnvironmentToken } from './tokens.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const config = (endpoint: string) => ({
  domain: 'share.example.com',
  endpointUrl: new URL(endpoint),
  credential: 'c'.repeat(32),
  credentialFile: '/dev/null',
  providers: ['google'],
});

describe('the tunnel offer of public_frontend', () => {
  it('gives absolute tunnel and access URLs on the endpoint host (https → wss, http → ws) and share URLs with its port', async () => {
    const store = new ControllerFileStore(mkdtempSync(join(tmpdir(), 'svc-pf-offer-')));
    const logger = createLogger('t', { level: 'silent' });
    const secure = await publicFrontendTunnel(store, config('https://share.example.com'), logger);
    expect(secure.offer.tunnelUrl).toBe('wss://share.example.com/api/v1/tunnel');
    expect(secure.offer.accessUrl).toBe('wss://share.example.com/api/v1/tunnel/access');
    expect(secure.offer.shareUrl('abc')).toBe('https://abc.share.example.com');
    expect(secure.registry.providerNames).toEqual(['google']);
    const plain = await publicFrontendTunnel(store, config('http://share.example.com:8080'), logger);
    expect(plain.offer.tunnelUrl).toBe('ws://share.example.com:8080/api/v1/tunnel');
    expect(plain.offer.shareUrl('abc')).toBe('http://abc.share.example.com:8080');
  });
});

describe('share tokens of the installation’s own hosts', () => {
  it('are refused by the share registry with 422 invalid_share naming the host', async () => {
    const store = new ControllerFileStore(mkdtempSync(join(tmpdir(), 'svc-pf-reserved-')));
    const logger = createLogger('t', { level: 'silent' });
    const reserved = { ...config('https://tunnel.share.example.com'), reservedHosts: ['auth.share.example.com'] };
    const { registry } = await publicFrontendTunnel(store, reserved, logger);
    const { hash } = newEnvironmentToken('laptopaaaaaa');
    const at = '2025-01-01T00:00:00.000Z';
    await store.createAccount({ id: 'alice', email: 'a@example.com', tokenHash: 'a'.repeat(64), createdAt: at });
    const env = {
      envZId: 'laptopaaaaaa',
      accountId: 'alice',
      description: '',
      host: '',
      tokenHash: hash,
      createdAt: at,
    };
    await store.createEnvironment(env);
    for (const [token, host] of [
      ['auth', 'auth.share.example.com'],
      ['tunnel', 'tunnel.share.example.com'],
    ]) {
      const refused = registry.register(env, { token: token as string, shareMode: 'public', backendMode: 'proxy' });
      await expect(refused).rejects.toMatchObject({ code: 'invalid_share', status: 422 });
      await expect(refused).rejects.toThrow(`${host} is a host of the installation itself`);
      expect(registry.lookup(token as string)).toBeUndefined();
    }
    await registry.register(env, { token: 'authx', shareMode: 'public', backendMode: 'proxy' });
    expect(registry.lookup('authx')?.envZId).toBe('laptopaaaaaa');
  });
});
