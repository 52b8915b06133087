import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createServer } from '../node-http.ts';
import { html, safeHref, trusted } from './html.ts';
import { CONTENT_SECURITY_POLICY } from './headers.ts';
import { OriginCheck, loopbackHosts } from './origin.ts';
import { page } from './page.ts';
import { StartSecret, cookieValue } from './session.ts';
import { SseHub } from './sse.ts';

function req(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

describe('html', () => {
  it('escapes interpolated text, keeps nested html and trusted markup', () => {
    const name = `<script>alert("x")</script>&'`;
    const out = html`<td title="${name}">${name}${html`<b>${'<i>'}</b>`}${trusted('<br>')}${[1, html`<i></i>`]}</td>`;
    expect(out.text).toBe(
      '<td title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">' +
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;<b>&lt;i&gt;</b><br>1<i></i></td>',
    );
    expect(html`${undefined}${null}${false}${0}`.text).toBe('0');
  });

  it('lets only http(s) URLs and same-origin paths into href', () => {
    expect(safeHref('https://a.example/x')).toBe('https://a.example/x');
    expect(safeHref('/shares/abc')).toBe('/shares/abc');
    for (const bad of ['javascript:alert(1)', 'data:text/html,x', '//evil.example/', 'not a url']) {
      expect(safeHref(bad)).toBe('#');
    }
  });

  it('builds a page shell with landmarks and no inline script or style', () => {
    const text = page({
      title: 'Shares <1>',
      main: html`<p>hi</p>`,
      nav: [{ href: '/', label: 'Home', current: true }],
      csrf: 't',
    }).text;
    expect(text).toContain('<main id="main"');
    expect(text).toContain('<nav aria-label="Main">');
    expect(text).toContain('aria-current="page"');
    expect(text).toContain('<h1>Shares &lt;1&gt;</h1>');
    expect(text).toContain('<meta name="csrf" content="t" />');
    expect(text).not.toMatch(/<script>|<style|style=/);
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
  });
});

describe('OriginCheck', () => {
  const check = new OriginCheck(loopbackHosts(4040));

  it('refuses a foreign Host (DNS rebinding) and accepts the page names', () => {
    expect(check.refuseHost(req({ host: '127.0.0.1:4040' }))).toBeUndefined();
    expect(check.refuseHost(req({ host: 'LOCALHOST:4040' }))).toBeUndefined();
    expect(check.refuseHost(req({ host: 'evil.example:4040' }))).toMatch(/not this page's address/);
    expect(check.refuseHost(req({ host: '127.0.0.1:4041' }))).toMatch(/not this page's address/);
    expect(check.refuseHost(req({}))).toMatch(/no Host/);
  });

  it('refuses writes without the same origin', () => {
    const host = '127.0.0.1:4040';
    expect(check.refuseWrite(req({ host, origin: 'http://127.0.0.1:4040' }))).toBeUndefined();
    expect(check.refuseWrite(req({ host }))).toMatch(/must carry Origin/);
    expect(check.refuseWrite(req({ host, origin: 'http://127.0.0.1:9999' }))).toMatch(/not this page's origin/);
    expect(check.refuseWrite(req({ host, origin: 'null' }))).toMatch(/not this page's origin/);
    expect(check.refuseWrite(req({ host, origin: 'http://127.0.0.1:4040', 'sec-fetch-site': 'same-site' }))).toMatch(
      /not same-origin/,
    );
  });
});

describe('StartSecret', () => {
  it('admits only the printed key and then knows the session cookie', () => {
    const secret = new StartSecret('svc-ui-4040');
    expect(secret.admit(new URL('http://x/?key=wrong'))).toBeUndefined();
    expect(secret.admit(new URL('http://x/'))).toBeUndefined();
    const cookie = secret.admit(new URL(`http://x${secret.entryPath()}`)) as string;
    expect(cookie).toMatch(/^svc-ui-4040=[\w-]+; Path=\/; HttpOnly; SameSite=Strict$/);
    const pair = cookie.split(';')[0] as string;
    const session = secret.sessionOf(req({ cookie: `a=b; ${pair}` })) as string;
    expect(session).toBe(pair.split('=')[1]);
    expect(secret.sessionOf(req({ cookie: 'svc-ui-4040=forged' }))).toBeUndefined();
    expect(secret.sessionOf(req({ cookie: `${pair}; ${pair}` }))).toBeUndefined();
    expect(secret.csrf.verify(session, secret.csrf.token(session))).toBe(true);
    expect(secret.csrf.verify(session, 'x')).toBe(false);
    expect(cookieValue('a=1; b=2', 'b')).toBe('2');
  });
});

describe('SseHub', () => {
  it('disconnects a client that stops reading once its buffer passes the bound', async () => {
    const hub = new SseHub({ maxBufferedBytes: 64 * 1024, maxClients: 2, heartbeatMs: 60_000 });
    const server = createServer((rq, rs) => hub.attach(rq, rs, 'a'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const res = await new Promise<IncomingMessage>((resolve) => httpRequest({ port, path: '/' }, resolve).end());
    expect(res.headers['content-type']).toMatch(/text\/event-stream/);
    res.pause();
    const closed = new Promise<void>((r) => res.once('close', () => r()));
    await new Promise((r) => setTimeout(r, 50));
    expect(hub.size).toBe(1);
    const big = 'x'.repeat(8 * 1024);
    for (let i = 0; i < 2000 && hub.size > 0; i++) {
      hub.publish('a', 'tick', big);
      await new Promise((r) => setImmediate(r));
    }
    expect(hub.size).toBe(0);
    res.resume();
    await closed;
    hub.close();
    server.close();
  });
});
