import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import { MEDIA_TYPE } from '../lib/api-client.ts';
import { problem, problemText, type Problem, type Result } from '../lib/errors.ts';
import { apiError } from './errors.ts';

const OPENAPI_PATH = new URL('./openapi.yaml', import.meta.url);

/** The parts of the OpenAPI document this module reads. */
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; responses: Record<string, ResponseObject | undefined> };
}

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema: unknown }>;
}

interface Operation {
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, ResponseObject>;
}

const SCHEMA_BASE = 'https://svc.dev/api/v1/openapi.json';

/**
 * The controller's OpenAPI 3.1 document (controller/openapi.yaml), compiled once: one request
 * validator per POST operation and one validator per documented response. OpenAPI 3.1 schemas are
 * JSON Schema 2020-12, so Ajv's 2020 build validates them directly; `#/components/schemas/X`
 * references are served from a bundle registered under one $id.
 */
export class OpenApi {
  readonly document: OpenApiDocument & Record<string, unknown>;
  private readonly ajv: Ajv2020;
  private readonly requests = new Map<string, ValidateFunction>();
  private readonly responses = new Map<string, ValidateFunction>();

  constructor(text = readFileSync(OPENAPI_PATH, 'utf8')) {
    this.document = parseYaml(text) as OpenApiDocument & Record<string, unknown>;
    this.ajv = new Ajv2020({ allErrors: true, strict: true, validateFormats: false });
    this.ajv.addSchema({ $id: SCHEMA_BASE, $defs: rewriteRefs(this.document.components.schemas) });
    for (const [path, item] of Object.entries(this.document.paths)) {
      // POST operations, and the frontend replicas' long poll (GET /frontend/registry).
      const op = item.post ?? item.get;
      if (!op) continue;
      const body = op.requestBody?.content[MEDIA_TYPE]?.schema;
      if (body) this.requests.set(path, this.ajv.compile(rewriteRefs(body) as object));
      for (const [status, response] of Object.entries(op.responses)) {
        const resolved = response.$ref ? this.resolveResponse(response.$ref) : response;
        const schema = resolved.content?.[MEDIA_TYPE]?.schema;
        if (schema) this.responses.set(`${path} ${status}`, this.ajv.compile(rewriteRefs(schema) as object));
      }
    }
  }

  /** The POST operations' paths (relative to `/api/v1`). */
  operations(): string[] {
    return [...this.requests.keys()];
  }

  /** The body, or every problem of it, each naming its field (`body.target: required`). */
  validateRequest(path: string, body: unknown): Result<unknown> {
    const validate = this.requests.get(path);
    if (!validate) return { ok: false, problems: [problem('', `no operation POST ${path}`, 'not_found')] };
    return validate(body) ? { ok: true, value: body } : { ok: false, problems: describeErrors(validate.errors ?? []) };
  }

  /** Problems of a response against the document (status must be documented for the operation). */
  validateResponse(path: string, status: number, body: unknown): string[] {
    const validate = this.responses.get(`${path} ${status}`);
    if (!validate) return [`status ${status} is not documented for ${path}`];
    return validate(body) ? [] : describeErrors(validate.errors ?? []).map(problemText);
  }

  private resolveResponse(ref: string): ResponseObject {
    const name = ref.replace('#/components/responses/', '');
    const found = this.document.components.responses[name];
    if (!found) throw new Error(`openapi.yaml: unresolved ${ref}`);
    return found;
  }
}

let shared: OpenApi | undefined;

/** The document compiled once per process. */
export function openApi(): OpenApi {
  shared ??= new OpenApi();
  return shared;
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (!value || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    out[key] =
      key === '$ref' && typeof inner === 'string'
        ? inner.replace('#/components/schemas/', `${SCHEMA_BASE}#/$defs/`)
        : rewriteRefs(inner);
  }
  return out;
}

/** Ajv errors as problems at `body.field`, without Ajv's internals (schema paths); each reported once. */
function describeErrors(errors: readonly ErrorObject[]): Problem[] {
  const found = new Map<string, Problem>();
  const add = (p: Problem) => found.set(problemText(p), p);
  for (const e of errors) {
    const where = `body${e.instancePath.replace(/\//g, '.')}`;
    if (e.keyword === 'required') {
      add(
        problem(
          `${where}.${String((e.params as { missingProperty: string }).missingProperty)}`,
          'required',
          'required',
        ),
      );
    } else if (e.keyword === 'additionalProperties') {
      const field = String((e.params as { additionalProperty: string }).additionalProperty);
      add(problem(`${where}.${field}`, 'unknown field', 'unknown_field'));
    } else if (e.keyword === 'enum') {
      const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.join(', ');
      add(problem(where, `must be one of ${allowed}`, 'not_allowed'));
    } else if (e.keyword !== 'oneOf' && e.keyword !== 'if') {
      add(problem(where, e.message ?? 'invalid'));
    }
  }
  return [...found.values()];
}

/**
 * `body` checked against the OpenAPI document's request schema of `opPath`: 422 `invalid_request`
 * listing every problem otherwise. The API and the console's forms go through this one check.
 */
export function checkedBody(openapi: OpenApi, opPath: string, body: object): Record<string, unknown> {
  const checked = openapi.validateRequest(opPath, body);
  if (!checked.ok) {
    const { problems } = checked;
    throw apiError('invalid_request', `invalid request body: ${problems.map(problemText).join('; ')}`, { problems });
  }
  return body as Record<string, unknown>;
}
