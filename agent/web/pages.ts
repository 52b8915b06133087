import { notFound } from '../../lib/errors.ts';
import { html, safeHref, type Html } from '../../lib/web/html.ts';
import { sendHtml } from '../../lib/web/headers.ts';
import { page, type NavItem } from '../../lib/web/page.ts';
import { tableSection } from '../../lib/web/widgets.ts';
import type { AccessDetails, ShareDetails } from '../agent.ts';
import { TOKEN, type PageContext, type Route } from './routes.ts';
import { shareForms } from './forms.ts';

const NAV: NavItem[] = [{ href: '/', label: 'Shares and accesses' }];

/** The page's HTML routes: the overview, its live tables as a fragment, a share's inspector. */
export function pageRoutes(ctx: PageContext): Route[] {
  return [
    {
      method: 'GET',
      path: /^\/$/,
      handle: ({ res, session }) => {
        const main = html`<div id="state" data-live="/fragments/state">${tables(ctx)}</div>
          ${shareForms(ctx.providers)}`;
        const csrf = ctx.secret.csrf.token(session);
        sendHtml(
          res,
          200,
          page({ title: 'Shares and accesses', main, nav: current(NAV, '/'), csrf, scripts: ['agent.js'] }),
        );
      },
    },
    { method: 'GET', path: /^\/fragments\/state$/, handle: ({ res }) => sendHtml(res, 200, tables(ctx)) },
    {
      method: 'GET',
      path: new RegExp(`^/shares/${TOKEN}$`),
      handle: ({ res, match, session }) => {
        const token = match[1] as string;
        const share = ctx.agent.details().shares.find((s) => s.token === token);
        if (!share) throw notFound(`no share ${token}`);
        const csrf = ctx.secret.csrf.token(session);
        const nav = [...NAV, { href: `/shares/${token}`, label: `Requests of ${token}`, current: true }];
        sendHtml(
          res,
          200,
          page({
            title: `Requests of ${token}`,
            main: inspectorMain(ctx, share),
            nav,
            csrf,
            scripts: ['inspector.js'],
          }),
        );
      },
    },
  ];
}

function current(nav: NavItem[], href: string): NavItem[] {
  return nav.map((n) => ({ ...n, current: n.href === href }));
}

/** The shares and accesses tables (the overview's live part). */
function tables(ctx: PageContext): Html {
  const { shares, accesses } = ctx.agent.details();
  return html`${tableSection({
    id: 'shares',
    title: 'Shares',
    columns: ['Token', 'Mode', 'Target', 'URL', 'OAuth', 'State', 'Actions'],
    rows: shares.map(shareRow),
    empty: 'No shares yet: create one below.',
  })}
  ${tableSection({
    id: 'accesses',
    title: 'Accesses',
    columns: ['Token', 'Share', 'Endpoint', 'State', 'Actions'],
    rows: accesses.map(accessRow),
    empty: 'No accesses.',
  })}`;
}

function shareRow(s: ShareDetails): Html {
  return html`<tr data-share="${s.token}">
    <th scope="row" class="mono">${s.token}</th>
    <td>${s.shareMode} · ${s.backendMode}</td>
    <td class="mono">${s.backendEndpoint}</td>
    <td>
      ${s.frontendEndpoints.map((u) => html`<a href="${safeHref(u)}" rel="noreferrer" target="_blank">${u}</a> `)}
    </td>
    <td>
      ${
        s.oauth
          ? html`${s.oauth.provider}; ${s.oauth.emailAddressPatterns.join(', ') || 'any address'}; every
            ${s.oauth.checkInterval}`
          : html`<span class="muted">none</span>`
      }
    </td>
    <td>${online(s.online)}</td>
    <td>
      ${s.inspected ? html`<a href="/shares/${s.token}">Requests</a>` : ''}
      ${
        s.backendMode === 'proxy'
          ? html`<button type="button" data-action="healthcheck" data-token="${s.token}">Health check</button>`
          : ''
      }
      <button type="button" class="danger" data-action="stop-share" data-token="${s.token}">Stop</button>
      <output class="result" data-result="${s.token}"></output>
    </td>
  </tr>`;
}

function accessRow(a: AccessDetails): Html {
  return html`<tr>
    <th scope="row" class="mono">${a.token}</th>
    <td class="mono">${a.shareToken}${a.remote ? html` <span class="muted">(another machine)</span>` : ''}</td>
    <td><a href="${safeHref(a.endpoint)}" rel="noreferrer" target="_blank">${a.endpoint}</a></td>
    <td>${online(a.online)}</td>
    <td><button type="button" class="danger" data-action="stop-access" data-token="${a.token}">Stop</button></td>
  </tr>`;
}

function online(on: boolean): Html {
  return on ? html`<span class="badge ok">online</span>` : html`<span class="badge bad">offline</span>`;
}

/** The inspector of one share: filters, the live list, the selected request and its replay. */
function inspectorMain(ctx: PageContext, share: ShareDetails): Html {
  const limits = ctx.inspector?.limits;
  return html`<p>
      <span class="mono">${share.backendEndpoint}</span> ·
      ${share.frontendEndpoints.map((u) => html`<a href="${safeHref(u)}" rel="noreferrer" target="_blank">${u}</a> `)}
      ${
        limits
          ? html`<span class="muted"
              >Keeps the last ${limits.requests} requests, bodies up to ${limits.bodyBytes} bytes.</span
            >`
          : html`<strong>The inspector is off (serve config ui.inspector.enabled).</strong>`
      }
    </p>
    <form id="filters" class="row" role="search" data-share="${share.token}" data-keep="${limits?.requests ?? 0}">
      <div class="field">
        <label for="f-status">Status</label>
        <select id="f-status" name="status">
          <option value="">any</option>
          <option value="2">2xx</option>
          <option value="3">3xx</option>
          <option value="4">4xx</option>
          <option value="5">5xx</option>
          <option value="0">no answer</option>
        </select>
      </div>
      <div class="field"><label for="f-path">Path contains</label><input id="f-path" name="path" type="search" /></div>
    </form>
    <div class="split">
      <section aria-labelledby="list-h">
        <h2 id="list-h">Requests <span id="count" class="muted"></span></h2>
        <table id="requests">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Method</th>
              <th scope="col">Path</th>
              <th scope="col">Status</th>
              <th scope="col">Duration</th>
              <th scope="col">Size</th>
              <th scope="col">Visitor</th>
            </tr>
          </thead>
          <tbody></tbody>
        </table>
      </section>
      <section aria-labelledby="detail-h" id="detail">
        <h2 id="detail-h">Request</h2>
        <p class="muted">Select a request to see its headers and bodies and to replay it.</p>
      </section>
    </div>`;
}
