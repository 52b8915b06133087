import { parse as parseYaml } from 'yaml';
import { problemText } from '../lib/errors.ts';
import { describe, expect, it } from 'vitest';
import { parseInstallation, type Installation } from './frontend-secret.ts';
import type { Share } from '../lib/kube/resources.ts';
import { desiredShareChildren, validateShare, type ValidShare } from './share-children.ts';
import { deriveToken } from '../lib/token.ts';
import { deriveShareKeys } from '../lib/share-keys.ts';

const section = {
  bind_address: '0.0.0.0:8443',
  endpoint_url: 'https://auth.share.example.com',
  cookie_name: 'svc-auth-session',
  cookie_domain: 'share.example.com',
  session_lifetime: '6h',
  intermediate_lifetime: '5m',
  signing_key: 's'.repeat(32),
  encryption_key: 'e'.repeat(24),
  providers: [{ name: 'google', type: 'idp1', client_id: 'id', client_secret: 'shh' }],
};

function installation(): Installation {
  const r = parseInstallation({ 'oauth.yaml': Buffer.from(JSON.stringify({ oauth: section })).toString('base64') });
  if (!r.ok) throw new Error(r.problems.map(problemText).join('; '));
  return r.value;
}

function share(name: string, spec: Share['spec']): Share {
  return {
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'Share',
    metadata: { name, namespace: 'team', uid: 'uid-1', generation: 1 },
    spec,
  };
}

function valid(s: Share, inst: Installation | undefined = installation()): ValidShare {
  const v = validateShare(s, inst);
  if (!v.ok) throw new Error(v.problems.map(problemText).join('; '));
  return v.value;
}

describe('validateShare', () => {
  it('derives the token from the uid when spec.token is absent', () => {
    expect(valid(share('a', { backendMode: 'proxy', target: 'http://x' })).token).toBe(deriveToken('uid-1'));
    expect(valid(share('a', { backendMode: 'proxy', target: 'http://x', token: 'mine' })).token).toBe('mine');
  });

  it('reports every problem the schema cannot catch, with field paths', () => {
    const v = validateShare(
      share('Bad.Name', {
        backendMode: 'web',
        target: '/etc/passwd',
        oauth: { provider: 'nope', emailAddressPatterns: ['[oops'], checkInterval: 'soon' },
      }),
      installation(),
    );
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.problems.some((p) => p.code === 'not_ready')).toBe(false);
    expect(v.problems.map(problemText)).toEqual([
      expect.stringMatching(/^metadata\.name: must be a DNS label/),
      expect.stringMatching(/^spec\.target: must be a directory under \/srv\/share/),
      'spec.webVolume: set exactly one of configMap or persistentVolumeClaim for spec.backendMode web',
      'spec.oauth.provider: unknown provider "nope" (configured: google)',
      expect.stringMatching(/^spec\.oauth\.emailAddressPatterns\[0\]: /),
      'spec.oauth.checkInterval: must be a duration such as 30m or 3h, got "soon"',
    ]);
  });

  it('waits for the installation when an OAuth share cannot be configured yet', () => {
    const v = validateShare(
      share('a', { backendMode: 'proxy', target: 'http://x', oauth: { provider: 'google' } }),
      undefined,
    );
    expect(v).toMatchObject({ ok: false, problems: [{ code: 'not_ready' }] });
  });

  it('rejects names whose Service name would exceed a DNS label', () => {
    expect(validateShare(share('x'.repeat(54), { backendMode: 'proxy', target: 'http://x' }), undefined).ok).toBe(
      false,
    );
    expect(validateShare(share('x'.repeat(53), { backendMode: 'proxy', target: 'http://x' }), undefined).ok).toBe(true);
  });
});

describe('desiredShareChildren', () => {
  const opts = { image: 'svc:1', domain: 'share.example.com', installation: installation() };

  it('builds agent-only children for a public share without OAuth', () => {
    const s = share('plain', { backendMode: 'proxy', target: 'http://app:8080', token: 'tok' });
    const c = desiredShareChildren(s, valid(s), opts);
    expect(c.secret).toBeUndefined();
    const pod = (c.deployment.spec as { template: { spec: { containers: { name: string; args: string[] }[] } } })
      .template.spec;
    expect(pod.containers.map((x) => x.name)).toEqual(['agent']);
    expect(pod.containers[0]?.args).toEqual([
      'agent',
      'backend',
      '--backend-mode',
      'proxy',
      '--target',
      'http://app:8080',
      '--listen',
      '0.0.0.0:9000',
      '--identity-headers',
      'strip',
    ]);
    expect(c.service.spec).toMatchObject({ ports: [{ port: 80, targetPort: 9000 }] });
    expect(c.ingress?.spec).toMatchObject({ rules: [{ host: 'tok.share.example.com' }] });
    expect(c.deployment.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'svc.dev/v1alpha1',
        kind: 'Share',
        name: 'plain',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it('gives the Ingress the configured class and annotations', () => {
    const s = share('classy', { backendMode: 'proxy', target: 'http://app:8080', token: 'tok' });
    const ingress = { className: 'nginx', annotations: { 'cert-manager.io/cluster-issuer': 'wildcard' } };
    const c = desiredShareChildren(s, valid(s), { ...opts, ingress });
    expect(c.ingress?.spec).toMatchObject({ ingressClassName: 'nginx' });
    expect(c.ingress?.metadata.annotations).toEqual({ 'cert-manager.io/cluster-issuer': 'wildcard' });
    expect(desiredShareChildren(s, valid(s), opts).ingress?.metadata.annotations).toBeUndefined();
  });

  it('runs the OAuth sidecar alone for a proxy share, proxying to the target, with its config from the installation', () => {
    const s = share('sec', {
      backendMode: 'proxy',
      target: 'https://app.team.svc:8443/base/',
      token: 'sec',
      oauth: { provider: 'google', emailAddressPatterns: ['*@x.io'] },
    });
    const c = desiredShareChildren(s, valid(s), opts);
    const containers = (c.deployment.spec as { template: { spec: { containers: { name: string; args: string[] }[] } } })
      .template.spec.containers;
    expect(containers.map((x) => x.name)).toEqual(['frontend']);
    expect(c.service.spec).toMatchObject({ ports: [{ port: 80, targetPort: 8080 }] });
    const config = parseYaml(
      Buffer.from((c.secret?.data as Record<string, string>)['config.yaml'] ?? '', 'base64').toString(),
    ) as Record<string, unknown>;
    // The share's own keys and no client secret: nothing in its namespace works for another share.
    const keys = deriveShareKeys(
      { signingKey: section.signing_key, encryptionKey: section.encryption_key },
      {
        token: 'sec',
        instance: 'uid-1',
      },
    );
    expect(config).toEqual({
      oauth: {
        ...section,
        bind_address: '0.0.0.0:8080',
        signing_key: keys.signingKey,
        encryption_key: keys.encryptionKey,
        providers: [{ name: 'google', type: 'idp1', client_id: 'id' }],
        auth_service: { url: 'http://svc-auth-internal.svc-system.svc:8081', credential: expect.any(String) as string },
      },
      shares: [
        {
          token: 'sec',
          instance: 'uid-1',
          target: 'https://app.team.svc:8443/base/',
          oauth_provider: 'google',
          oauth_email_address_patterns: ['*@x.io'],
          oauth_check_interval: '3h',
        },
      ],
      metrics_address: '0.0.0.0:9090',
    });
  });

  it('puts the OAuth sidecar in front of the agent for a web share, the files served on loopback', () => {
    const s = share('docs', {
      backendMode: 'web',
      target: '/srv/share/site',
      webVolume: { configMap: 'site' },
      oauth: { provider: 'google' },
    });
    const c = desiredShareChildren(s, valid(s), opts);
    const containers = (c.deployment.spec as { template: { spec: { containers: { name: string; args: string[] }[] } } })
      .template.spec.containers;
    expect(containers.map((x) => x.name)).toEqual(['agent', 'frontend']);
    expect(containers[0]?.args).toEqual([
      'agent',
      'backend',
      '--backend-mode',
      'web',
      '--target',
      '/srv/share/site',
      '--listen',
      '127.0.0.1:9000',
      '--identity-headers',
      'pass',
    ]);
    const config = parseYaml(
      Buffer.from((c.secret?.data as Record<string, string>)['config.yaml'] ?? '', 'base64').toString(),
    ) as { shares: { target: string }[] };
    expect(config.shares.map((x) => x.target)).toEqual(['http://127.0.0.1:9000']);
  });

  it('mounts the web volume read-only for a web share and skips the Ingress for a private one', () => {
    const s = share('files', {
      shareMode: 'private',
      backendMode: 'web',
      target: '/srv/share/site',
      webVolume: { configMap: 'site' },
    });
    const c = desiredShareChildren(s, valid(s), opts);
    expect(c.ingress).toBeUndefined();
    const pod = (
      c.deployment.spec as { template: { spec: { volumes: unknown[]; containers: { volumeMounts: unknown[] }[] } } }
    ).template.spec;
    expect(pod.volumes).toContainEqual({ name: 'share', configMap: { name: 'site' } });
    expect(pod.containers[0]?.volumeMounts).toContainEqual({ name: 'share', mountPath: '/srv/share', readOnly: true });
  });
});
