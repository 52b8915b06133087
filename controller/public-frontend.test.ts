import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/logger.ts';
import { ControllerFileStore } from './file-store.ts';
import { publicFrontendTunnel } from './public-frontend.ts';
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
