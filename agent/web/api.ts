import { badInput, notFound } from '../../lib/errors.ts';
import { API_SHARE_FIELDS } from '../../lib/share/surfaces.ts';
import { readForm } from '../../lib/web/body.ts';
import { sendJson } from '../../lib/web/headers.ts';
import { replay } from '../inspector/replay.ts';
import type { RequestFieldNames } from '../requests.ts';
import { TOKEN, type PageContext, type Route, type RouteCall } from './routes.ts';
import { detail, replayView, summary } from './views.ts';

/** How the page's forms name the fields of a health check and an access (its error messages). */
export const PAGE_REQUEST_FIELDS: RequestFieldNames = {
  endpoint: 'path',
  expectedStatus: 'expectedStatus',
  timeout: 'timeout',
  bindAddress: 'bind',
};

/**
 * The page's JSON routes. Every operation calls the same Agent method, with the same validator, as
 * the CLI's local API; the page only names the fields its forms use and turns form text into the
 * types the validator reads (a pattern list, a number) without judging it.
 */
export function apiRoutes(ctx: PageContext): Route[] {
  const { agent } = ctx;
  return [
    { method: 'GET', path: /^\/api\/state$/, handle: ({ res }) => sendJson(res, 200, state(ctx)) },
    {
      method: 'GET',
      path: /^\/events$/,
      handle: ({ req, res, url }) =>
        ctx.hub.attach(req, res, url.searchParams.has('share') ? `share:${url.searchParams.get('share')}` : '*'),
    },
    {
      method: 'POST',
      path: /^\/api\/shares$/,
      handle: async (c) => sendJson(c.res, 201, await agent.share(shareBody(await readForm(c.req)), API_SHARE_FIELDS)),
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/shares/${TOKEN}/stop$`),
      handle: async (c) => sendJson(c.res, 200, await agent.unshare(c.match[1] as string)),
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/shares/${TOKEN}/healthcheck$`),
      handle: async (c) => {
        const body = await readForm(c.req);
        const result = await agent.healthCheck(
          {
            shareToken: c.match[1] as string,
            verb: text(body.verb, 'verb'),
            path: text(body.path, 'path'),
            expectedStatus: numeric(body.expectedStatus),
            timeout: body.timeout,
            followRedirects: body.followRedirects === true,
          },
          PAGE_REQUEST_FIELDS,
        );
        sendJson(c.res, 200, result);
      },
    },
    {
      method: 'POST',
      path: /^\/api\/accesses$/,
      handle: async (c) => {
        const body = await readForm(c.req);
        const bind = typeof body.bind === 'string' ? body.bind : undefined;
        sendJson(c.res, 201, await agent.access(text(body.shareToken, 'shareToken'), bind, PAGE_REQUEST_FIELDS));
      },
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/accesses/${TOKEN}/stop$`),
      handle: async (c) => sendJson(c.res, 200, (await agent.unaccess(c.match[1] as string)) ?? {}),
    },
    ...inspectorRoutes(ctx),
  ];
}

/** The request inspector's routes: a share's recorded requests, one in full, a replay. */
function inspectorRoutes(ctx: PageContext): Route[] {
  const recorded = (c: RouteCall) => {
    const store = ctx.inspector;
    const record = store?.get(c.match[1] as string, Number(c.match[2]));
    if (!record) throw notFound(`no recorded request ${c.match[2]} of share ${c.match[1]}`);
    return record;
  };
  return [
    {
      method: 'GET',
      path: new RegExp(`^/api/shares/${TOKEN}/requests$`),
      handle: (c) => sendJson(c.res, 200, { requests: (ctx.inspector?.list(c.match[1] as string) ?? []).map(summary) }),
    },
    {
      method: 'GET',
      path: new RegExp(`^/api/shares/${TOKEN}/requests/(\\d{1,15})$`),
      handle: (c) => sendJson(c.res, 200, detail(recorded(c))),
    },
    {
      method: 'POST',
      path: new RegExp(`^/api/shares/${TOKEN}/requests/(\\d{1,15})/replay$`),
      handle: async (c) => {
        const record = recorded(c);
        const body = await readForm(c.req);
        const target = ctx.agent.backendOf(record.share);
        if (!target) throw notFound(`share ${record.share} is stopped`);
        const edits = {
          ...(typeof body.method === 'string' ? { method: body.method } : {}),
          ...(typeof body.path === 'string' ? { path: body.path } : {}),
          ...(typeof body.headers === 'string' ? { headers: body.headers } : {}),
          ...(typeof body.body === 'string' ? { body: body.body } : {}),
        };
        const limit = ctx.inspector?.limits.bodyBytes ?? 0;
        sendJson(c.res, 200, replayView(await replay(target, record, edits, limit, ctx.ownCookie)));
      },
    },
  ];
}

/** The page's state: shares and accesses in detail, the providers to choose from, the inspector's bounds. */
export function state(ctx: PageContext): Record<string, unknown> {
  return {
    ...ctx.agent.details(),
    providers: ctx.providers,
    inspector: ctx.inspector ? ctx.inspector.limits : null,
  };
}

/** The share form as the validator reads it: email patterns given as text become a list. */
function shareBody(body: Record<string, unknown>): Record<string, unknown> {
  const patterns = body.oauthEmailAddressPatterns;
  if (typeof patterns !== 'string') return body;
  return { ...body, oauthEmailAddressPatterns: patterns.split(/[\s,]+/).filter((p) => p !== '') };
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value === '') throw badInput(`${field}: required`);
  return value;
}

/** A form's digits as a number; anything else as given, for the validator to judge. */
function numeric(value: unknown): unknown {
  return typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;
}
