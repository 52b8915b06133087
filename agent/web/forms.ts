import { html, type Html } from '../../lib/web/html.ts';
import { field, select } from '../../lib/web/widgets.ts';

/** The overview's forms: a new share, a new access, a health check (labels for every field). */
export function shareForms(providers: readonly string[]): Html {
  return html`<section class="panel" aria-labelledby="new-share-h">
      <h2 id="new-share-h">New share</h2>
      <form id="new-share" method="post" action="/api/shares">
        <div class="row">
          ${field('s-mode', 'Share mode', select('s-mode', 'shareMode', ['public', 'private']))}
          ${field('s-backend', 'Backend mode', select('s-backend', 'backendMode', ['proxy', 'web']))}
          ${field(
            's-target',
            'Target (URL for proxy, absolute folder for web)',
            html`<input id="s-target" name="target" size="40" required placeholder="http://127.0.0.1:3000" />`,
          )}
          ${field('s-provider', 'OAuth provider', select('s-provider', 'oauthProvider', providers, 'none'))}
          ${field(
            's-patterns',
            'Allowed email addresses (patterns, comma separated)',
            html`<input id="s-patterns" name="oauthEmailAddressPatterns" size="30" placeholder="*@example.com" />`,
          )}
          ${field(
            's-interval',
            'Re-check interval',
            html`<input id="s-interval" name="oauthCheckInterval" size="6" placeholder="3h" />`,
          )}
          ${field('s-listing', 'Folder listing (web)', html`<input id="s-listing" name="webListing" type="checkbox" />`)}
          <button type="submit" class="primary">Create share</button>
        </div>
        <p class="error" data-error role="alert"></p>
      </form>
    </section>
    <section class="panel" aria-labelledby="new-access-h">
      <h2 id="new-access-h">New access to a private share</h2>
      <form id="new-access" method="post" action="/api/accesses" class="row">
        ${field('a-share', 'Share token', html`<input id="a-share" name="shareToken" required />`)}
        ${field('a-bind', 'Bind address', html`<input id="a-bind" name="bind" placeholder="127.0.0.1:0" />`)}
        <button type="submit" class="primary">Create access</button>
        <p class="error" data-error role="alert"></p>
      </form>
    </section>
    <section class="panel" aria-labelledby="health-h">
      <h2 id="health-h">Health check</h2>
      <form id="healthcheck" class="row">
        ${field('h-share', 'Share token', html`<input id="h-share" name="token" required />`)}
        ${field('h-verb', 'Method', select('h-verb', 'verb', ['GET', 'HEAD', 'POST']))}
        ${field('h-path', 'Path', html`<input id="h-path" name="path" value="/" required />`)}
        ${field('h-status', 'Expected status', html`<input id="h-status" name="expectedStatus" value="200" size="4" />`)}
        ${field('h-timeout', 'Timeout', html`<input id="h-timeout" name="timeout" value="5s" size="4" />`)}
        <button type="submit">Check</button>
        <p class="error" data-error role="alert"></p>
        <output id="health-result" for="h-share"></output>
      </form>
    </section>`;
}
