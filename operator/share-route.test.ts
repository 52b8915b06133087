import { describe, expect, it } from 'vitest';
import type { Problem } from '../lib/errors.ts';
import { parseOperatorFlags } from './options.ts';
import { desiredShareRoute, parseShareRoute, routeNotServing, routeTlsCondition } from './share-route.ts';

const GATEWAY = { name: 'public', namespace: 'gateway-system', sectionName: 'https' };

function parsed(text: string | undefined): { value: unknown; problems: string[] } {
  const problems: Problem[] = [];
  const value = parseShareRoute(text, problems);
  return { value, problems: problems.map((p) => `${p.path}: ${p.message}`) };
}

describe('parseShareRoute', () => {
  it('is absent without the flag, and takes parentRefs, annotations and tls', () => {
    expect(parsed(undefined)).toEqual({ value: undefined, problems: [] });
    expect(parsed(JSON.stringify({ parentRefs: [GATEWAY], annotations: { a: 'b' }, tls: 'gateway' }))).toEqual({
      value: { parentRefs: [GATEWAY], annotations: { a: 'b' }, tls: 'gateway' },
      problems: [],
    });
    expect(parsed(JSON.stringify({ parentRefs: [{ name: 'gw' }] })).value).toEqual({
      parentRefs: [{ name: 'gw' }],
      annotations: {},
      tls: 'none',
    });
  });

  it('reaches the operator options as the share ingress route, and a bad one stops start-up', () => {
    const flags = {
      namespaceScope: 'all',
      frontendSecret: 'svc-system/svc-frontend',
      shareDomain: 'share.example.com',
      image: 'svc:1',
    };
    const route = { parentRefs: [GATEWAY], annotations: {}, tls: 'gateway' };
    expect(parseOperatorFlags({ ...flags, shareHttpRoute: JSON.stringify(route) }).ingress.route).toEqual(route);
    expect(parseOperatorFlags(flags).ingress.route).toBeUndefined();
    expect(() => parseOperatorFlags({ ...flags, shareHttpRoute: '{"parentRefs":[]}' })).toThrow(
      /--share-http-route: parentRefs: must list at least one Gateway/,
    );
  });

  it('names every bad field', () => {
    const { value, problems } = parsed(
      JSON.stringify({ parentRefs: [{ name: 'Bad_Name' }, { name: 'gw', port: 0 }], tls: 'perHost', extra: 1 }),
    );
    expect(value).toBeUndefined();
    expect(problems).toEqual([
      expect.stringContaining('--share-http-route: extra: unknown field'),
      '--share-http-route: parentRefs[0].name: must be a Gateway name',
      '--share-http-route: parentRefs[1].port: must be a port 1-65535, got 0',
      '--share-http-route: tls: must be gateway or none, got "perHost"',
    ]);
    expect(parsed('{}').problems).toEqual([
      '--share-http-route: parentRefs: must list at least one Gateway to attach share routes to',
    ]);
    expect(parsed('[').problems[0]).toContain('--share-http-route: must be a JSON object');
  });
});

describe('routeNotServing', () => {
  const route = (parents: unknown[]): { metadata: { name: string; namespace: string }; status: unknown } => ({
    metadata: { name: 'svc-share-a', namespace: 'team-a' },
    status: { parents },
  });
  const parent = (ref: object, status: 'True' | 'False', reason = 'Accepted') => ({
    parentRef: ref,
    controllerName: 'example.com/gw',
    conditions: [{ type: 'Accepted', status, reason, message: 'm' }],
  });

  it('serves once every configured Gateway accepted it, matching defaulted parent references', () => {
    const defaulted = { group: 'gateway.networking.k8s.io', kind: 'Gateway', ...GATEWAY };
    expect(routeNotServing(route([parent(defaulted, 'True')]), 'r', [GATEWAY])).toBeUndefined();
    // A Gateway in the route's own namespace, named without a namespace on either side.
    expect(
      routeNotServing(route([parent({ name: 'local', namespace: 'team-a' }, 'True')]), 'r', [{ name: 'local' }]),
    ).toBeUndefined();
  });

  it('waits for a Gateway not reporting it, and reports one refusing it', () => {
    expect(routeNotServing(undefined, 'r', [GATEWAY])).toMatchObject({ reason: 'RoutePending', problem: false });
    expect(routeNotServing(route([parent({ ...GATEWAY, sectionName: 'http' }, 'True')]), 'r', [GATEWAY])).toMatchObject(
      { reason: 'RoutePending' },
    );
    expect(routeNotServing(route([parent(GATEWAY, 'False', 'NotAllowedByListeners')]), 'r', [GATEWAY])).toEqual({
      reason: 'RouteNotAccepted',
      message: 'HTTPRoute r is not accepted by Gateway gateway-system/public (https): NotAllowedByListeners: m',
      problem: true,
    });
  });
});

describe('desiredShareRoute and its TLS condition', () => {
  it('routes the one host to the Service, and says where TLS ends', () => {
    const options = { parentRefs: [GATEWAY], annotations: {}, tls: 'none' as const };
    const route = desiredShareRoute(
      { name: 'svc-share-a', namespace: 'team-a' },
      'a.share.example.com',
      'svc-share-a',
      options,
    );
    expect(route.spec).toEqual({
      parentRefs: [GATEWAY],
      hostnames: ['a.share.example.com'],
      rules: [
        { matches: [{ path: { type: 'PathPrefix', value: '/' } }], backendRefs: [{ name: 'svc-share-a', port: 80 }] },
      ],
    });
    expect(route.metadata.annotations).toBeUndefined();
    expect(routeTlsCondition(options)).toMatchObject({ status: 'False', reason: 'TLSNotConfigured' });
    expect(routeTlsCondition({ ...options, tls: 'gateway' })).toMatchObject({
      status: 'True',
      reason: 'TLSConfigured',
    });
  });
});
