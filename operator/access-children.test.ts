import { describe, expect, it } from 'vitest';
import { accessEndpoint, desiredAccessChildren, findShare, validateAccess } from './access-children.ts';
import type { Access, Share } from '../lib/kube/resources.ts';

const access = (spec: Access['spec'], name = 'reach-db'): Access => ({
  metadata: { name, namespace: 'team', uid: 'u' },
  spec,
});
const share: Share = {
  metadata: { name: 'db', namespace: 'team', uid: 's' },
  spec: { shareMode: 'private' },
  status: { token: 'dbtok' },
};

describe('Access children', () => {
  it('validates and defaults bindPort', () => {
    const v = validateAccess(access({ shareToken: 'dbtok' }));
    expect(v).toEqual({
      ok: true,
      value: { name: 'reach-db', namespace: 'team', shareToken: 'dbtok', bindPort: 8080 },
    });
    expect(validateAccess(access({ shareToken: 'Bad_Token' }, 'x'.repeat(60)))).toMatchObject({
      ok: false,
      problems: [{ path: 'metadata.name' }, { path: 'spec.shareToken' }],
    });
  });

  it('finds the share by token in the same namespace only', () => {
    expect(findShare([share], 'team', 'dbtok')).toBe(share);
    expect(findShare([share], 'other', 'dbtok')).toBeUndefined();
  });

  it('forwards to the share Service and reports the in-cluster endpoint', () => {
    const v = validateAccess(access({ shareToken: 'dbtok', bindPort: 5432 }));
    if (!v.ok) throw new Error('invalid');
    const c = desiredAccessChildren(access({ shareToken: 'dbtok', bindPort: 5432 }), v.value, share, 'svc:1');
    const args = (c.deployment.spec as { template: { spec: { containers: { args: string[] }[] } } }).template.spec
      .containers[0]?.args;
    expect(args).toEqual([
      'agent',
      'backend',
      '--backend-mode',
      'proxy',
      '--target',
      'http://svc-share-db.team.svc:80',
      '--listen',
      '0.0.0.0:5432',
      '--identity-headers',
      'strip',
    ]);
    expect(c.service.spec).toMatchObject({ ports: [{ port: 5432, targetPort: 5432 }] });
    expect(accessEndpoint(v.value)).toBe('http://svc-access-reach-db.team.svc:5432');
  });
});
