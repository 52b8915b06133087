import { trafficTotals } from '../../lib/share/traffic.ts';
import { trafficChart, trafficSummary } from './chart.ts';
import type { AdminView, EnvironmentView, ShareView } from './views.ts';
import { html, safeHref, type Html } from '../../lib/web/html.ts';
import { page, type NavItem } from '../../lib/web/page.ts';

/** Who looks at a page: the banner shows the email, every form carries the CSRF token. */
export interface Viewer {
  readonly email: string;
  readonly admin: boolean;
  readonly csrf: string;
}

/** What happened on the last operation: shown above the environments, announced to screen readers. */
export interface Notice {
  readonly kind: 'ok' | 'error';
  readonly text: string;
}

function nav(viewer: Viewer, current: 'console' | 'admin'): NavItem[] {
  const items: NavItem[] = [{ href: '/console', label: 'Environments', current: current === 'console' }];
  if (viewer.admin) items.push({ href: '/console/admin', label: 'Admin', current: current === 'admin' });
  return items;
}

function noticeBlock(notice: Notice | undefined): Html {
  if (!notice) return html``;
  return html`<p class="notice ${notice.kind}" role="${notice.kind === 'error' ? 'alert' : 'status'}">
    ${notice.text}
  </p>`;
}

/**
 * The kit's page shell (lib/web/page.ts) with the console's style sheet, its script on live pages,
 * and the signed-in email with a sign-out button above the content.
 */
function consolePage(options: { title: string; main: Html; viewer?: Viewer; nav?: NavItem[]; live?: boolean }): Html {
  const { viewer } = options;
  const signOut = viewer
    ? html`<form class="signout" method="post" action="/console/signout">
        <span class="who">Signed in as ${viewer.email}</span>
        <input type="hidden" name="_csrf" value="${viewer.csrf}" />
        <button type="submit">Sign out</button>
      </form>`
    : '';
  return page({
    title: options.title,
    product: 'svc console',
    main: html`${signOut}${options.main}`,
    assetBase: ASSET_BASE,
    styles: ['console.css'],
    ...(options.nav ? { nav: options.nav } : {}),
    ...(viewer ? { csrf: viewer.csrf } : {}),
    ...(options.live ? { scripts: ['console.js'] } : {}),
  });
}

/** Where the console's static files (the kit's and its own) are served. */
export const ASSET_BASE = '/console/assets/';

/** The sign-in page: the account token form and one button per configured provider. */
export function signInPage(options: { providers: readonly string[]; csrf: string; notice?: Notice }): Html {
  // Links, not forms: the CSP's form-action 'self' would block a form's redirect to the provider.
  const providers = options.providers.map(
    (p) => html`<p><a class="button" href="/console/oauth/${p}/start">Sign in with ${p}</a></p>`,
  );
  return consolePage({
    title: 'Sign in',
    main: html`${noticeBlock(options.notice)}
      <section aria-labelledby="by-token">
        <h2 id="by-token">With your account token</h2>
        <form method="post" action="/console/signin" class="stack">
          <input type="hidden" name="_csrf" value="${options.csrf}" />
          <label for="token">Account token (svca_…)</label>
          <input id="token" name="token" type="password" autocomplete="off" required />
          <button type="submit">Sign in</button>
        </form>
      </section>
      ${
        providers.length > 0
          ? html`<section aria-labelledby="by-provider">
              <h2 id="by-provider">With an identity provider</h2>
              ${providers}
            </section>`
          : ''
      }`,
  });
}

/** A plain page for an outcome without a session (refused sign-in, not found). */
export function messagePage(title: string, message: string, viewer?: Viewer): Html {
  return consolePage({
    title,
    ...(viewer ? { viewer, nav: nav(viewer, 'console') } : {}),
    main: html`<p class="notice error" role="alert">${message}</p>
      <p><a href="/console">Back to the console</a></p>`,
  });
}

/**
 * After an OAuth callback: the session cookie is SameSite=Strict, so the first page must be loaded
 * by a navigation that starts here, not by the provider's cross-site redirect.
 */
export function signedInPage(): Html {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta http-equiv="refresh" content="0;url=/console" />
        <link rel="icon" href="data:," />
        <title>Signed in · svc console</title>
      </head>
      <body>
        <p>Signed in. <a href="/console">Continue to the console</a>.</p>
      </body>
    </html> `;
}

/** The account's environments, shares, accesses and traffic, with the forms of each operation. */
export function dashboardPage(
  viewer: Viewer,
  environments: readonly EnvironmentView[],
  providers: readonly string[],
  notice?: Notice,
): Html {
  const body =
    environments.length === 0
      ? html`<p>No environments yet: run <code>svc enable &lt;account token&gt;</code> on a machine.</p>`
      : environments.map((env) => environmentSection(viewer, env, providers));
  return consolePage({
    title: 'Environments',
    viewer,
    nav: nav(viewer, 'console'),
    live: true,
    main: html`${noticeBlock(notice)}${body}`,
  });
}

function environmentSection(viewer: Viewer, env: EnvironmentView, providers: readonly string[]): Html {
  const { envZId } = env.record;
  const name = env.record.description || env.record.host || envZId;
  return html`<section class="env" id="env-${envZId}" aria-labelledby="env-${envZId}-h">
    <h2 id="env-${envZId}-h">${name}</h2>
    <dl class="facts">
      <dt>Environment</dt>
      <dd><code>${envZId}</code></dd>
      <dt>State</dt>
      <dd>
        <span class="state ${env.online ? 'online' : 'offline'}" data-env="${envZId}"
          >${env.online ? 'online' : 'offline'}</span
        >
      </dd>
      <dt>Last seen</dt>
      <dd>
        <span data-seen="${envZId}"
          >${env.lastSeen ? new Date(env.lastSeen).toISOString() : 'not since the installation started'}</span
        >
      </dd>
      <dt>Agent version</dt>
      <dd>${env.agentVersion ?? 'unknown'}</dd>
      <dt>Remote commands</dt>
      <dd>${env.remote ? 'available' : (env.agentProblem ?? 'unavailable')}</dd>
    </dl>
    <h3>Shares</h3>
    ${env.shares.length === 0 ? html`<p>No shares.</p>` : sharesTable(viewer, env, env.shares)}
    <h3>Accesses</h3>
    ${
      env.accesses.length === 0
        ? html`<p>No accesses${env.remote ? '' : ' known (the agent is not reachable)'}.</p>`
        : html`<table>
            <thead>
              <tr>
                <th scope="col">Access</th>
                <th scope="col">Share</th>
                <th scope="col">Listens at</th>
              </tr>
            </thead>
            <tbody>
              ${env.accesses.map(
                (a) =>
                  html`<tr>
                    <td><code>${a.token}</code></td>
                    <td><code>${a.shareToken}</code></td>
                    <td>${a.endpoint}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`
    }
    ${env.remote ? createShareForm(viewer, envZId, providers) : ''}
  </section>`;
}

function sharesTable(viewer: Viewer, env: EnvironmentView, shares: readonly ShareView[]): Html {
  const rows = shares.map((s) => {
    const summary = trafficSummary(trafficTotals(s.traffic));
    return html`<tr data-share="${s.token}">
      <th scope="row"><code>${s.token}</code>${s.url ? html`<br /><a href="${safeHref(s.url)}">${s.url}</a>` : ''}</th>
      <td>${s.shareMode} · ${s.backendMode}${s.oauthProvider ? html` · OAuth ${s.oauthProvider}` : ''}</td>
      <td>${s.target ?? '—'}</td>
      <td>
        <div class="traffic" data-chart="${s.token}">${trafficChart(s.traffic)}</div>
        <span class="summary" data-summary="${s.token}">${summary}</span>
      </td>
      <td>${env.remote ? shareActions(viewer, env.record.envZId, s) : ''}</td>
    </tr>`;
  });
  return html`<table class="shares">
    <thead>
      <tr>
        <th scope="col">Share</th>
        <th scope="col">Mode</th>
        <th scope="col">Target</th>
        <th scope="col">Traffic (last hour)</th>
        <th scope="col">Actions</th>
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

function shareActions(viewer: Viewer, envZId: string, share: ShareView): Html {
  const id = `hc-${share.token}`;
  return html`<form method="post" action="/console/unshare" class="inline">
      <input type="hidden" name="_csrf" value="${viewer.csrf}" />
      <input type="hidden" name="envZId" value="${envZId}" />
      <input type="hidden" name="token" value="${share.token}" />
      <button type="submit" class="danger">Stop ${share.token}</button>
    </form>
    ${
      share.backendMode === 'proxy'
        ? html`<form method="post" action="/console/healthcheck" class="inline">
            <input type="hidden" name="_csrf" value="${viewer.csrf}" />
            <input type="hidden" name="envZId" value="${envZId}" />
            <input type="hidden" name="shareToken" value="${share.token}" />
            <label for="${id}-path">Path</label><input id="${id}-path" name="endpoint" value="/" size="10" />
            <label for="${id}-status">Expect</label
            ><input id="${id}-status" name="expectedHttpResponse" value="200" size="3" inputmode="numeric" />
            <button type="submit">Health check</button>
          </form>`
        : ''
    }`;
}

function createShareForm(viewer: Viewer, envZId: string, providers: readonly string[]): Html {
  const id = `new-${envZId}`;
  return html`<details class="create">
    <summary>Create a share on this environment</summary>
    <form method="post" action="/console/share" class="stack">
      <input type="hidden" name="_csrf" value="${viewer.csrf}" />
      <input type="hidden" name="envZId" value="${envZId}" />
      <label for="${id}-target">Target (http(s) URL, or a folder for web)</label>
      <input id="${id}-target" name="target" required />
      <label for="${id}-mode">Share mode</label>
      <select id="${id}-mode" name="shareMode">
        <option>public</option>
        <option>private</option>
      </select>
      <label for="${id}-backend">Backend mode</label>
      <select id="${id}-backend" name="backendMode">
        <option>proxy</option>
        <option>web</option>
      </select>
      <label for="${id}-provider">OAuth provider (public shares)</label>
      <select id="${id}-provider" name="oauthProvider">
        <option value="">none</option>
        ${providers.map((p) => html`<option>${p}</option>`)}
      </select>
      <label for="${id}-patterns">Allowed emails (patterns, comma separated)</label>
      <input id="${id}-patterns" name="oauthEmailAddressPatterns" placeholder="*@example.com" />
      <button type="submit">Create share</button>
    </form>
  </details>`;
}

/** The admin view: every account and environment, and which frontend replica holds which tunnel. */
export function adminPage(viewer: Viewer, view: AdminView): Html {
  const rows = view.accounts.flatMap(({ account, environments }) =>
    environments.length === 0
      ? [
          html`<tr>
            <td>${account.email}</td>
            <td><code>${account.id}</code></td>
            <td colspan="3">no environments</td>
          </tr>`,
        ]
      : environments.map(
          (e) =>
            html`<tr>
              <td>${account.email}</td>
              <td><code>${account.id}</code></td>
              <td><code>${e.record.envZId}</code> ${e.record.description}</td>
              <td>${e.online ? 'online' : 'offline'}</td>
              <td>${e.shares}</td>
            </tr>`,
        ),
  );
  const replicas = view.replicas.map(
    (r) =>
      html`<tr data-replica="${r.name}">
        <td>${r.name}</td>
        <td>${r.environments.length === 0 ? 'none' : r.environments.map((e) => html`<code>${e}</code> `)}</td>
      </tr>`,
  );
  return consolePage({
    title: 'Admin',
    viewer,
    nav: nav(viewer, 'admin'),
    main: html`<section aria-labelledby="accounts-h">
        <h2 id="accounts-h">Accounts and environments</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Account</th>
              <th scope="col">Id</th>
              <th scope="col">Environment</th>
              <th scope="col">State</th>
              <th scope="col">Shares</th>
            </tr>
          </thead>
          <tbody>
            ${rows}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="replicas-h">
        <h2 id="replicas-h">Frontend replicas</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Replica</th>
              <th scope="col">Holds the tunnels of</th>
            </tr>
          </thead>
          <tbody>
            ${replicas}
          </tbody>
        </table>
      </section>`,
  });
}
