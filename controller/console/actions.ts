import type { AccountRecord } from '../store.ts';
import { checkedBody, type OpenApi } from '../openapi.ts';
import type { Operation } from '../operations/context.ts';
import { apiError } from '../errors.ts';

/** A console form's operation: the API path it runs and how its fields become the request body. */
interface FormOperation {
  readonly path: string;
  body(form: ReadonlyMap<string, string>): Record<string, unknown>;
  /** The notice shown after it succeeded. */
  done(result: unknown, body: Record<string, unknown>): string;
}

const text = (form: ReadonlyMap<string, string>, key: string): string | undefined => {
  const value = form.get(key)?.trim();
  return value ? value : undefined;
};

/** A whole number stays a number; anything else goes to the schema as text, which names the field. */
const integer = (value: string | undefined): number | string | undefined =>
  value !== undefined && /^\d{1,6}$/.test(value) ? Number(value) : value;

/** The forms of the console, by their path under `/console`. */
export const FORM_OPERATIONS: ReadonlyMap<string, FormOperation> = new Map<string, FormOperation>([
  [
    '/console/share',
    {
      path: '/agent/share',
      body: (form) => {
        const patterns = text(form, 'oauthEmailAddressPatterns')
          ?.split(/[\s,]+/)
          .filter(Boolean);
        const provider = text(form, 'oauthProvider');
        return {
          envZId: text(form, 'envZId') ?? '',
          shareMode: text(form, 'shareMode') ?? '',
          backendMode: text(form, 'backendMode') ?? '',
          target: text(form, 'target') ?? '',
          ...(provider ? { oauthProvider: provider } : {}),
          ...(patterns && patterns.length > 0 ? { oauthEmailAddressPatterns: patterns } : {}),
        };
      },
      done: (result) => {
        const { token, frontendEndpoints } = result as { token: string; frontendEndpoints: string[] };
        return `Share ${token} created${frontendEndpoints[0] ? ` at ${frontendEndpoints[0]}` : ''}.`;
      },
    },
  ],
  [
    '/console/unshare',
    {
      path: '/agent/unshare',
      body: (form) => ({ envZId: text(form, 'envZId') ?? '', token: text(form, 'token') ?? '' }),
      done: (_result, body) => `Share ${String(body.token)} stopped.`,
    },
  ],
  [
    '/console/healthcheck',
    {
      path: '/agent/share/http-healthcheck',
      body: (form) => ({
        envZId: text(form, 'envZId') ?? '',
        shareToken: text(form, 'shareToken') ?? '',
        httpVerb: text(form, 'httpVerb') ?? 'GET',
        endpoint: text(form, 'endpoint') ?? '/',
        expectedHttpResponse: integer(text(form, 'expectedHttpResponse')) ?? 200,
      }),
      done: (result, body) => {
        const { healthy, error } = result as { healthy: boolean; error?: string };
        const share = String(body.shareToken);
        return healthy ? `Share ${share} is healthy.` : `Share ${share} is unhealthy: ${error ?? 'no reason given'}`;
      },
    },
  ],
]);

/**
 * Runs a console form through the API's own path: the OpenAPI request schema (the one validator),
 * then the operation, which checks that the account owns the environment and forwards the command.
 */
export async function runForm(
  form: FormOperation,
  fields: ReadonlyMap<string, string>,
  account: AccountRecord,
  openapi: OpenApi,
  operations: ReadonlyMap<string, Operation>,
): Promise<string> {
  const body = checkedBody(openapi, form.path, form.body(fields));
  const operation = operations.get(form.path);
  if (!operation) throw apiError('not_found', `no API operation at ${form.path}`);
  return form.done(await operation.handle(account, body), body);
}
