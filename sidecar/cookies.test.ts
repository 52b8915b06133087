import { describe, expect, it } from 'vitest';
import { cookieValue, withoutOwnCookies } from './cookies.ts';

describe('cookieValue', () => {
  it('finds a cookie among others, trimmed', () => {
    expect(cookieValue('a=1; svc=sealed ; b=2', 'svc')).toBe('sealed');
    expect(cookieValue('svc=a=b', 'svc')).toBe('a=b');
    expect(cookieValue('svc=sealed; svc-login=x; a=svc', 'svc')).toBe('sealed');
  });

  it('trusts no copy of a cookie sent twice (one of them was not set by the frontend)', () => {
    expect(cookieValue('svc=first; svc=second', 'svc')).toBeUndefined();
    expect(cookieValue('a=1; svc=tossed; b=2; svc = own', 'svc')).toBeUndefined();
    expect(cookieValue('svc=x;svc=x', 'svc')).toBeUndefined();
  });

  it('matches whole names only and skips parts without a name or value', () => {
    expect(cookieValue('svc.1=x; xsvc=y', 'svc')).toBeUndefined();
    expect(cookieValue('=svc; svc; ;svc=ok', 'svc')).toBe('ok');
    expect(cookieValue('theme=dark', 'svc')).toBeUndefined();
    expect(cookieValue(undefined, 'svc')).toBeUndefined();
    expect(cookieValue('', 'svc')).toBeUndefined();
  });
});

describe('withoutOwnCookies', () => {
  it('drops every cookie whose name starts with the frontend cookie name and keeps the rest', () => {
    expect(withoutOwnCookies('svc=1; theme=dark; svc-login=2; lang=en', 'svc')).toBe('theme=dark; lang=en');
    expect(withoutOwnCookies(['svc=1', 'a=b'], 'svc')).toBe('a=b');
    expect(withoutOwnCookies('svc=1', 'svc')).toBeUndefined();
  });

  it('drops the prefixed session and binding cookies (`__Host-`, `__Secure-`, any letter case)', () => {
    const header = '__Host-svc=1; __Host-svc-bind=2; __secure-svc=3; a=b; __Host-other=4';
    expect(withoutOwnCookies(header, 'svc')).toBe('a=b; __Host-other=4');
    expect(withoutOwnCookies('__HOST-svc-bind=2', 'svc')).toBeUndefined();
  });

  it('keeps or drops a header of one cookie as it does a longer one', () => {
    expect(withoutOwnCookies(' theme=dark ', 'svc')).toBe('theme=dark');
    expect(withoutOwnCookies(' svc-login=2', 'svc')).toBeUndefined();
    expect(withoutOwnCookies('  ', 'svc')).toBeUndefined();
    expect(withoutOwnCookies('svc', 'svc')).toBeUndefined();
  });
});
