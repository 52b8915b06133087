import { html, type Html } from './html.ts';

/** One entry of the page's main navigation. */
export interface NavItem {
  readonly href: string;
  readonly label: string;
  readonly current?: boolean;
}

/** What a page shell holds; everything but `title` and `main` is optional. */
export interface PageOptions {
  readonly title: string;
  readonly main: Html;
  /** Shown in the header before the navigation (default `svc`). */
  readonly product?: string;
  readonly nav?: readonly NavItem[];
  /** The session's CSRF token, read by kit.js and sent on every state-changing request. */
  readonly csrf?: string;
  /** Script modules by file name under `assetBase` (kit.js is loaded by them, not listed). */
  readonly scripts?: readonly string[];
  /** Extra style sheets by file name under `assetBase` (kit.css always comes first). */
  readonly styles?: readonly string[];
  /** Where the static assets are served (default `/assets/`). */
  readonly assetBase?: string;
}

/**
 * The page shell every svc page uses: a skip link, the banner with the product name and the main
 * navigation (`aria-current` on the current entry), `<main>` with the page's `<h1>`, and a polite
 * live region (`#announce`) that kit.js fills with the outcome of operations. No inline script or
 * style: the Content-Security-Policy (headers.ts) forbids both.
 */
export function page(options: PageOptions): Html {
  const base = options.assetBase ?? '/assets/';
  const nav = options.nav ?? [];
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${options.csrf ? html`<meta name="csrf" content="${options.csrf}" />` : ''}
        <title>${options.title} · ${options.product ?? 'svc'}</title>
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href="${base}kit.css" />
        ${(options.styles ?? []).map((s) => html`<link rel="stylesheet" href="${base}${s}" />`)}
        ${(options.scripts ?? []).map((s) => html`<script type="module" src="${base}${s}"></script>`)}
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/">${options.product ?? 'svc'}</a>
          ${
            nav.length > 0
              ? html`<nav aria-label="Main">
                  <ul>
                    ${nav.map(
                      (n) =>
                        html`<li><a href="${n.href}" ${n.current ? html`aria-current="page"` : ''}>${n.label}</a></li>`,
                    )}
                  </ul>
                </nav>`
              : ''
          }
        </header>
        <main id="main" tabindex="-1">
          <h1>${options.title}</h1>
          ${options.main}
        </main>
        <div id="announce" class="announce" role="status" aria-live="polite"></div>
      </body>
    </html> `;
}
