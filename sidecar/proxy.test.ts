import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { applyBackendHeaders } from '../lib/http-pipe.ts';
import { backendHeaders } from './proxy.ts';
import type { Session } from './session.ts';

const PUBLIC = new URL('https://svc.example.com');

function request(headers: IncomingHttpHeaders, remoteAddress = '10.1.2.3'): IncomingMessage {
  return { headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

/** The flat list as name → values, for assertions that do not depend on order. */
function byName(list: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    out.set(name, [...(out.get(name) ?? []), list[i + 1] as string]);
  }
  return out;
}

const session: Session = {
  id: 's1',
  share: 'docs',
  instance: 'docs',
  provider: 'idp1',
  email: 'alice@example.com',
  expiresAt: Date.UTC(2026, 10, 23, 12, 0, 0),
  checkedAt: 0,
  tokens: {},
};

describe('backendHeaders', () => {
  it('drops identity and forwarding look-alikes, rebuilds forwarding headers and adds the identity', () => {
    const list = backendHeaders(
      request({
        host: 'docs.svc.example.com',
        accept: 'text/html',
        'svc-auth-email': 'mallory@example.com',
        svc_auth_email: 'mallory@example.com',
        'svc.auth.provider': 'idp2',
        'x-forwarded-for': '203.0.113.7',
        x_forwarded_host: 'evil.example',
        'x-forwarded-proto': 'http',
        forwarded: 'for=203.0.113.7;host=evil.example',
        'x-real-ip': '203.0.113.7',
      }),
      'svc',
      session,
      PUBLIC,
    );
    const headers = byName(list);
    expect(headers.get('accept')).toEqual(['text/html']);
    expect(headers.get('svc-auth-email')).toEqual(['alice@example.com']);
    expect(headers.get('svc-auth-provider')).toEqual(['idp1']);
    expect(headers.get('svc-auth-expires')).toEqual(['2026-11-23T12:00:00.000Z']);
    expect(headers.has('svc_auth_email')).toBe(false);
    expect(headers.has('svc.auth.provider')).toBe(false);
    expect(headers.has('x_forwarded_host')).toBe(false);
    expect(headers.get('x-forwarded-for')).toEqual(['203.0.113.7, 10.1.2.3']);
    expect(headers.get('x-forwarded-host')).toEqual(['docs.svc.example.com']);
    expect(headers.get('x-forwarded-proto')).toEqual(['https']);
    expect(headers.get('x-forwarded-port')).toEqual(['443']);
    expect(headers.get('x-real-ip')).toEqual(['10.1.2.3']);
    expect(headers.get('forwarded')).toEqual(['for=10.1.2.3;host="docs.svc.example.com";proto=https']);
  });

  it('adds no identity without a session, and a later session gets its own expiry', () => {
    expect(byName(backendHeaders(request({ host: 'a' }), 'svc', undefined, PUBLIC)).has('svc-auth-email')).toBe(false);
    const later = { ...session, expiresAt: session.expiresAt + 1000 };
    expect(byName(backendHeaders(request({ host: 'a' }), 'svc', session, PUBLIC)).get('svc-auth-expires')).toEqual([
      '2026-11-23T12:00:00.000Z',
    ]);
    expect(byName(backendHeaders(request({ host: 'a' }), 'svc', later, PUBLIC)).get('svc-auth-expires')).toEqual([
      '2026-11-23T12:00:01.000Z',
    ]);
  });

  it("removes the frontend's own cookies and keeps the backend's", () => {
    const headers = byName(
      backendHeaders(request({ cookie: 'svc=sealed; theme=dark; svc.1=more' }), 'svc', undefined, PUBLIC),
    );
    expect(headers.get('cookie')).toEqual(['theme=dark']);
    expect(byName(backendHeaders(request({ cookie: 'svc=sealed' }), 'svc', undefined, PUBLIC)).has('cookie')).toBe(
      false,
    );
  });

  it('drops identity names from Connection, and Connection when nothing is left', () => {
    const kept = byName(backendHeaders(request({ connection: 'Upgrade, svc-auth-email' }), 'svc', session, PUBLIC));
    expect(kept.get('connection')).toEqual(['Upgrade']);
    const none = byName(backendHeaders(request({ connection: 'svc-auth-email' }), 'svc', session, PUBLIC));
    expect(none.has('connection')).toBe(false);
  });

  it('lists a repeated header once per value, and applyBackendHeaders joins them back', () => {
    const req = request({ host: 'a', 'set-cookie': ['a=1', 'b=2'], 'svc-auth-email': 'x@example.com' });
    const list = backendHeaders(req, 'svc', undefined, PUBLIC);
    expect(byName(list).get('set-cookie')).toEqual(['a=1', 'b=2']);
    applyBackendHeaders(req, list);
    expect(req.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(req.headers['svc-auth-email']).toBeUndefined();
    expect(req.headers['x-forwarded-for']).toBe('10.1.2.3');
  });
});
