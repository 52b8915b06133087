import { describe, expect, it } from 'vitest';
import { containsDesired, jsonEqual, setCondition } from './conditions.ts';
import { frontendEndpoint, parseInstallation } from './frontend-secret.ts';
import { parseOperatorFlags } from './options.ts';
import { deriveToken } from '../lib/token.ts';

describe('deriveToken', () => {
  it('is deterministic, 12 characters of lower-case base32', () => {
    expect(deriveToken('abc')).toBe(deriveToken('abc'));
    expect(deriveToken('abc')).not.toBe(deriveToken('abd'));
    expect(deriveToken('0b0f9c1e-7d4c-4b2a-9a53-1f0e6d2c8a11')).toMatch(/^[a-z2-7]{12}$/);
  });
});

describe('setCondition', () => {
  const t0 = new Date('2025-01-01T00:00:00Z');
  const t1 = new Date('2025-01-01T01:00:00Z');
  it('moves lastTransitionTime only when the status changes', () => {
    const a = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'A', message: 'a' }, 1, t0);
    const b = setCondition(a, { type: 'Ready', status: 'False', reason: 'B', message: 'b' }, 2, t1);
    expect(b[0]).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'B',
      message: 'b',
      lastTransitionTime: '2025-01-01T00:00:00Z',
      observedGeneration: 2,
    });
    const c = setCondition(b, { type: 'Ready', status: 'True', reason: 'C', message: 'c' }, 2, t1);
    expect(c[0]?.lastTransitionTime).toBe('2025-01-01T01:00:00Z');
    expect(a[0]?.reason).toBe('A');
  });
});

describe('jsonEqual / containsDesired', () => {
  it('ignores key order and undefined fields', () => {
    expect(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1, d: undefined })).toBe(true);
    expect(jsonEqual({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
  });
  it('accepts server defaults but not missing or changed fields', () => {
    const desired = { spec: { replicas: 1, containers: [{ name: 'a', args: ['x'] }] } };
    expect(
      containsDesired(
        {
          spec: {
            replicas: 1,
            paused: false,
            containers: [{ name: 'a', args: ['x'], imagePullPolicy: 'IfNotPresent' }],
          },
        },
        desired,
      ),
    ).toBe(true);
    expect(containsDesired({ spec: { replicas: 2, containers: [{ name: 'a', args: ['x'] }] } }, desired)).toBe(false);
    expect(
      containsDesired({ spec: { replicas: 1, containers: [{ name: 'a', args: ['x'] }, { name: 'b' }] } }, desired),
    ).toBe(false);
  });
});

describe('installation', () => {
  it('names the missing key and field problems without values', () => {
    expect(parseInstallation({})).toEqual({
      ok: false,
      problems: [{ path: '', code: 'required', message: 'key oauth.yaml is missing' }],
    });
    const bad = parseInstallation({
      'oauth.yaml': Buffer.from('oauth:\n  signing_key: short-secret\n').toString('base64'),
    });
    expect(bad.ok).toBe(false);
    expect(JSON.stringify(bad)).not.toContain('short-secret');
  });
  it('builds share URLs with the endpoint_url port, https only when share hosts get TLS', () => {
    expect(frontendEndpoint('tok', 'share.example.com', new URL('https://auth.share.example.com'), true)).toBe(
      'https://tok.share.example.com',
    );
    expect(frontendEndpoint('tok', 'share.example.com', new URL('https://auth.share.example.com'), false)).toBe(
      'http://tok.share.example.com',
    );
    expect(frontendEndpoint('tok', 'share.test', new URL('http://auth.share.test:8443'), false)).toBe(
      'http://tok.share.test:8443',
    );
  });
});

describe('parseOperatorFlags', () => {
  const base = {
    namespaceScope: 'all',
    frontendSecret: 'svc-system/prod-frontend',
    shareDomain: 'x.io',
    image: 'svc:1',
  };
  it('reports every bad flag at once', () => {
    expect(() =>
      parseOperatorFlags({ namespaceScope: 'Not_A_Namespace', frontendSecret: 'nope', metricsListen: 'x' }),
    ).toThrow(
      /--namespace-scope.*\n.*--frontend-secret.*\n.*--share-domain: required.*\n.*--image: required.*\n.*--metrics-listen/s,
    );
  });
  it('derives the auth Secret and the Lease from the frontend Secret', () => {
    const o = parseOperatorFlags({
      namespaceScope: 'all',
      frontendSecret: 'svc-system/prod-frontend',
      shareDomain: 'Share.Example.com',
      image: 'svc:1',
    });
    expect(o).toMatchObject({
      authSecret: { namespace: 'svc-system', name: 'prod-auth-frontend' },
      lease: { namespace: 'svc-system', name: 'svc-operator' },
      shareDomain: 'share.example.com',
      metricsListen: { host: '0.0.0.0', port: 8080 },
      leaderElect: false,
    });
    expect(o.namespace).toBeUndefined();
    expect(o.ingress).toEqual({ annotations: {}, tls: { mode: 'none' } });
    expect(o.unenrollDeadlineMs).toBe(600_000);
  });
  it('reads the Lease name, share TLS and unenroll deadline, naming what is malformed', () => {
    const o = parseOperatorFlags({
      ...base,
      leaseName: 'edge-operator',
      ingressTls: 'secret:wild',
      unenrollDeadline: '3m',
    });
    expect(o.lease).toEqual({ namespace: 'svc-system', name: 'edge-operator' });
    expect(o.ingress.tls).toEqual({ mode: 'secret', secretName: 'wild' });
    expect(o.unenrollDeadlineMs).toBe(180_000);
    for (const [flag, tls] of [
      ['per-host', { mode: 'perHost' }],
      ['default-certificate', { mode: 'defaultCertificate' }],
      ['external', { mode: 'external' }],
    ] as const)
      expect(parseOperatorFlags({ ...base, ingressTls: flag }).ingress.tls).toEqual(tls);
    expect(() =>
      parseOperatorFlags({ ...base, leaseName: 'Bad_Lease', ingressTls: 'wildcard', unenrollDeadline: '30s' }),
    ).toThrow(
      /--ingress-tls: must be none, per-host.*\n.*--lease-name: must be a Lease name.*\n.*--unenroll-deadline/s,
    );
    expect(() => parseOperatorFlags({ ...base, ingressTls: 'secret:' })).toThrow(/--ingress-tls: secret:<name> needs/);
  });
  it('reads the share Ingress class and annotations, refusing malformed ones', () => {
    const o = parseOperatorFlags({ ...base, ingressClass: 'nginx', ingressAnnotation: ['a.io/b=c=d', 'e=f'] });
    expect(o.ingress).toEqual({ className: 'nginx', annotations: { 'a.io/b': 'c=d', e: 'f' }, tls: { mode: 'none' } });
    expect(() => parseOperatorFlags({ ...base, ingressClass: 'Bad Class', ingressAnnotation: ['novalue'] })).toThrow(
      /--ingress-class: must be an IngressClass name.*\n.*--ingress-annotation: must be key=value/s,
    );
  });
});
