import { describe, expect, it } from 'vitest';
import { BackendCookies } from './backend-cookies.ts';

const rule = new BackendCookies('svc-auth-session', 'Svc.Example').forShare('app');
const openRule = new BackendCookies(undefined, 'svc.example').forShare('app');

describe('a share backend setting the frontend own cookies', () => {
  it('is refused in every spelling a browser or a server could read as one of them', () => {
    const spellings = [
      'svc-auth-session=sealed; Domain=svc.example; Path=/; HttpOnly',
      'svc-auth-session-login=x; Domain=svc.example',
      'svc-auth-session=',
      'SVC-AUTH-SESSION=x',
      'Svc-Auth-Session=x',
      ' svc-auth-session =x',
      '\tsvc-auth-session\t=x',
      '"svc-auth-session"=x',
      '=svc-auth-session=x',
      '== svc-auth-session=x',
      'svc-auth-session',
      '__Secure-svc-auth-session=x; Secure',
      '__Host-svc-auth-session=x; Secure; Path=/',
      '__HOST-svc-auth-session=x',
      '__secure-__host-svc-auth-session=x',
      'svc-auth-sessionX=1',
      'a=1, svc-auth-session=x; Domain=svc.example',
      'a=1; Expires=Thu, 01 Jan 2099 00:00:00 GMT, svc-auth-session=x',
    ];
    for (const value of spellings) expect(rule.filter(value), value).toBeUndefined();
  });

  it('keeps cookies that only mention the name in a value or an attribute', () => {
    expect(rule.filter('theme=svc-auth-session-fan')).toBe('theme=svc-auth-session-fan');
    expect(rule.filter('a=1; Path=/svc-auth-session')).toBe('a=1; Path=/svc-auth-session');
  });

  it('keeps every name on a frontend without OAuth (there is no cookie of its own)', () => {
    expect(openRule.filter('svc-auth-session=x')).toBe('svc-auth-session=x');
  });
});

describe('Domain attributes', () => {
  it('are removed unless they name the share host itself, which makes the cookie host-only', () => {
    expect(rule.filter('pref=1; Domain=svc.example; Path=/')).toBe('pref=1; Path=/');
    expect(rule.filter('pref=1;Domain=.SVC.example;Secure')).toBe('pref=1;Secure');
    expect(rule.filter('pref=1; domain=example')).toBe('pref=1');
    expect(rule.filter('pref=1; Domain=other.svc.example')).toBe('pref=1');
    expect(rule.filter('pref=1; Domain')).toBe('pref=1');
    expect(rule.filter('pref=1; Domain=')).toBe('pref=1');
    expect(openRule.filter('pref=1; Domain=svc.example')).toBe('pref=1');
  });

  it('are kept when they name the share host, in any case or with a leading dot', () => {
    for (const value of ['pref=1; Domain=app.svc.example', 'pref=1; Domain=.APP.svc.example; Path=/']) {
      expect(rule.filter(value)).toBe(value);
    }
  });

  it('every one is read: the last wins in browsers, so a foreign one after the host is removed too', () => {
    expect(rule.filter('pref=1; Domain=app.svc.example; Domain=svc.example')).toBe('pref=1; Domain=app.svc.example');
  });

  it('a value that only looks like one is left alone, and the same object comes back when nothing changes', () => {
    const value = 'domain=svc.example; Path=/';
    expect(rule.filter(value)).toBe(value);
    const plain = 'session=abc; Path=/; HttpOnly';
    expect(rule.filter(plain)).toBe(plain);
  });
});

describe('BackendCookies', () => {
  it('keeps one rule per share, for its host', () => {
    const cookies = new BackendCookies('svc-auth-session', 'svc.example');
    expect(cookies.forShare('one')).toBe(cookies.forShare('one'));
    expect(cookies.forShare('one').host).toBe('one.svc.example');
  });
});
