import { html, type Html } from './html.ts';

/** One entry of the page's navigation. */
export interface NavItem {
  readonly href: string;
  readonly label: string;
  readonly current?: boolean;
}

/** What a console page holds. */
export interface PageOptions {
  readonly title: string;
  readonly main: Html;
  readonly nav?: readonly NavItem[];
  /** The signed-in email and the sign-out form's CSRF token, shown in the banner. */
  readonly user?: { readonly email: string; readonly csrf: string };
  /** Load the console's script (live updates over server-sent events). */
  readonly live?: boolean;
}

/** Where the console's static files are served. */
export const ASSET_BASE = '/console/assets/';

/**
 * The shell of every console page: a skip link, the banner with the navigation (`aria-current` on
 * the current entry) and the sign-out button, `<main>` with the page's `<h1>`. No inline script or
 * style: the Content-Security-Policy forbids both.
 */
export function page(options: PageOptions): Html {
  const nav = options.nav ?? [];
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${options.title} · svc console</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="${ASSET_BASE}console.css" />
        ${options.live ? html`<script type="module" src="${ASSET_BASE}console.js"></script>` : ''}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/console">svc console</a>
          ${
            nav.length > 0
              ? html`<nav aria-label="Main">
                  <ul>
                    ${nav.map(
                      (n) =>
                        html`<li>
                          <a href="${n.href}" ${n.current ? html` aria-current="page"` : ''}>${n.label}</a>
                        </li>`,
                    )}
                  </ul>
                </nav>`
              : ''
          }
          ${
            options.user
              ? html`<form class="signout" method="post" action="/console/signout">
                  <span class="who">${options.user.email}</span>
                  <input type="hidden" name="csrf" value="${options.user.csrf}" />
                  <button type="submit">Sign out</button>
                </form>`
              : ''
          }
        </header>
        <main id="main" tabindex="-1">
          <h1>${options.title}</h1>
          ${options.main}
        </main>
      </body>
    </html> `;
}
