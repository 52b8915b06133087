import { describe, expect, it } from 'vitest';
import { problemText } from '../lib/errors.ts';
import type { Share } from '../lib/kube/resources.ts';
import { desiredShareChildren, validateShare } from './share-children.ts';
import { tlsCondition, type ShareTls } from './share-tls.ts';

const share: Share = {
  apiVersion: 'svc.dev/v1alpha1',
  kind: 'Share',
  metadata: { name: 'docs', namespace: 'team', uid: 'uid-1', generation: 1 },
  spec: { backendMode: 'proxy', target: 'http://docs.team.svc', token: 'docs1' },
};

function ingressTls(tls: ShareTls | undefined): unknown {
  const v = validateShare(share, undefined);
  if (!v.ok) throw new Error(v.problems.map(problemText).join('; '));
  const children = desiredShareChildren(share, v.value, {
    image: 'svc:1',
    domain: 'share.example.com',
    ingress: { annotations: { 'cert-manager.io/cluster-issuer': 'le' }, ...(tls ? { tls } : {}) },
  });
  return (children.ingress?.spec as { tls?: unknown }).tls;
}

describe('share Ingress TLS', () => {
  it('names a per-host Secret beside the Ingress, the installation Secret, or the default certificate', () => {
    expect(ingressTls({ mode: 'perHost' })).toEqual([
      { hosts: ['docs1.share.example.com'], secretName: 'svc-share-docs-tls' },
    ]);
    expect(ingressTls({ mode: 'secret', secretName: 'share-wildcard' })).toEqual([
      { hosts: ['docs1.share.example.com'], secretName: 'share-wildcard' },
    ]);
    expect(ingressTls({ mode: 'defaultCertificate' })).toEqual([{ hosts: ['docs1.share.example.com'] }]);
  });

  it('leaves tls out when the Ingress terminates none', () => {
    expect(ingressTls(undefined)).toBeUndefined();
    expect(ingressTls({ mode: 'none' })).toBeUndefined();
    expect(ingressTls({ mode: 'external' })).toBeUndefined();
  });

  it('says in the TLS condition whether the host is served over https', () => {
    expect(tlsCondition(undefined, 'svc-share-docs')).toMatchObject({ status: 'False', reason: 'TLSNotConfigured' });
    expect(tlsCondition({ mode: 'perHost' }, 'svc-share-docs')).toMatchObject({
      status: 'True',
      reason: 'TLSConfigured',
      message: 'the Ingress names its own certificate Secret svc-share-docs-tls',
    });
    expect(tlsCondition({ mode: 'external' }, 'svc-share-docs').status).toBe('True');
  });
});
