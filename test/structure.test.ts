/**
 * The dependency directions of docs/design.md ("Folders and who may import whom"), checked on every
 * relative import — static, `import type`, `export … from` and dynamic `import()` — of every
 * TypeScript file in the product folders. A forbidden import fails here with the file, the line and
 * the rule it breaks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

/** Folders each product folder may import, besides itself. */
const ALLOWED: Record<string, readonly string[]> = {
  lib: [],
  sidecar: ['lib'],
  agent: ['lib'],
  controller: ['lib'],
  operator: ['lib'],
  // The development identity provider of `--dev` and the tests: never loaded by a production role.
  devidp: ['lib'],
  // Composition roots: they build processes out of the roles.
  serve: ['lib', 'sidecar', 'agent', 'controller', 'devidp'],
  cli: ['lib', 'sidecar', 'agent', 'controller', 'operator', 'devidp', 'serve'],
  bin: ['cli'],
};
/** Shared test code a unit test beside the code may use. */
const TEST_SUPPORT = ['test/support', 'test/contracts'];

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

interface Edge {
  readonly file: string;
  readonly line: number;
  readonly target: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

function importsOf(file: string): Edge[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const edges: Edge[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] as string;
    const target = relative(ROOT, resolve(dirname(join(ROOT, file)), spec))
      .split(sep)
      .join('/');
    edges.push({ file, line: text.slice(0, m.index).split('\n').length, target });
  }
  return edges;
}

function topFolder(path: string): string {
  return path.split('/')[0] as string;
}

/** Why an import breaks the rules, or undefined when it is allowed. */
function violation(edge: Edge): string | undefined {
  const from = topFolder(edge.file);
  const to = topFolder(edge.target);
  if (from === to) return undefined;
  if (edge.file.endsWith('.test.ts') && TEST_SUPPORT.some((d) => edge.target.startsWith(`${d}/`))) return undefined;
  if (ALLOWED[from]?.includes(to)) return undefined;
  return `${edge.file}:${edge.line} imports ${edge.target}: ${from}/ may import only ${[from, ...(ALLOWED[from] ?? [])].join(', ')}`;
}

describe('dependency directions', () => {
  const files = Object.keys(ALLOWED).flatMap(sourceFiles);
  const edges = files.flatMap(importsOf);

  it('reads the imports of every product file', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges.some((e) => e.file.startsWith('serve/') && e.target.startsWith('sidecar/'))).toBe(true);
  });

  it('has no import that breaks the folder rules', () => {
    expect(edges.map(violation).filter(Boolean)).toEqual([]);
  });

  it('reports a sideways import with file, line and rule', () => {
    const edge = { file: 'agent/agent.ts', line: 3, target: 'sidecar/frontend.ts' };
    expect(violation(edge)).toBe('agent/agent.ts:3 imports sidecar/frontend.ts: agent/ may import only agent, lib');
    expect(violation({ file: 'lib/x.ts', line: 1, target: 'operator/y.ts' })).toMatch(/lib\/ may import only lib$/);
    expect(violation({ file: 'agent/a.test.ts', line: 1, target: 'test/support/http.ts' })).toBeUndefined();
    expect(violation({ file: 'agent/a.ts', line: 1, target: 'test/support/http.ts' })).toMatch(/may import only/);
  });
});

/**
 * The one file that may take node:http as a value. Any ESM import of node:http — default, named,
 * `import { type X }` (type stripping keeps it as `import {}`), side-effect, `export … from` or
 * dynamic — makes Node 24 build its namespace, whose WebSocket/CloseEvent/MessageEvent getters load
 * undici with node:tls, node:http2 and node:zlib: megabytes of RSS in every process, fetch or not.
 */
const NODE_HTTP = 'lib/node-http.ts';
const HTTP_VALUE_IMPORT = [
  /(?:^|[;\n])[ \t]*(?:import|export)\s+(?!type\b)(?:[^;'"]*?\bfrom\s*)?['"](?:node:)?http['"]/g,
  /\bimport\s*\(\s*['"](?:node:)?http['"]/g,
];

/** Why each value import of node:http in `file` is refused (type-only imports are allowed). */
function nodeHttpViolations(file: string, text: string): string[] {
  if (file === NODE_HTTP || file.endsWith('.test.ts')) return [];
  return HTTP_VALUE_IMPORT.flatMap((re) => [...text.matchAll(re)]).map((m) => {
    const line = text.slice(0, m.index + m[0].search(/\S/)).split('\n').length;
    return (
      `${file}:${line} imports node:http as a value: take createServer, request, Agent … from ${NODE_HTTP} ` +
      '(an ESM import of node:http loads undici, node:tls, node:http2 and node:zlib) and its types with `import type`'
    );
  });
}

/** What `check` finds in every product file. */
function inProductFiles(check: (file: string, text: string) => string[]): string[] {
  return Object.keys(ALLOWED)
    .flatMap(sourceFiles)
    .flatMap((f) => check(f, readFileSync(join(ROOT, f), 'utf8')));
}

describe('node:http only through lib/node-http.ts', () => {
  it('has no value import of node:http in the product folders', () => {
    expect(inProductFiles(nodeHttpViolations)).toEqual([]);
  });

  it('refuses every value form and allows type-only imports', () => {
    const refused = [
      "import http from 'node:http';",
      "import { createServer } from 'node:http';",
      "import http, { type Server } from 'node:http';",
      "import { type Server } from 'node:http';",
      "import * as http from 'http';",
      "import 'node:http';",
      "export { STATUS_CODES } from 'node:http';",
      "const http = await import('node:http');",
      "import {\n  createServer,\n  request,\n} from 'node:http';",
    ];
    for (const text of refused) {
      expect(nodeHttpViolations('agent/a.ts', `// x\n${text}\n`), text).toEqual([
        expect.stringMatching(/^agent\/a\.ts:2 imports node:http as a value: take .* from lib\/node-http\.ts/),
      ]);
    }
    const allowed = [
      "import type { IncomingMessage, Server } from 'node:http';",
      "import type * as Http from 'node:http';",
      "export type { IncomingMessage } from 'node:http';",
      "import https from 'node:https';",
      "import { constants } from 'node:http2';",
      "const http = process.getBuiltinModule('node:http');",
    ];
    for (const text of allowed) expect(nodeHttpViolations('agent/a.ts', text), text).toEqual([]);
    expect(nodeHttpViolations('lib/node-http.ts', "import http from 'node:http';")).toEqual([]);
    expect(nodeHttpViolations('agent/a.test.ts', "import http from 'node:http';")).toEqual([]);
  });
});

/**
 * Packages only one folder may import. oidc-provider (with koa and its other dependencies) is the
 * development identity provider's: a production frontend that imported it would carry a whole
 * identity provider in every process.
 */
const PACKAGE_OWNERS: Readonly<Record<string, string>> = { 'oidc-provider': 'devidp' };

/** Why each import of an owned package from outside its folder is refused. */
function packageViolations(file: string, text: string): string[] {
  return Object.entries(PACKAGE_OWNERS).flatMap(([name, owner]) => {
    if (topFolder(file) === owner) return [];
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const re = new RegExp(`(?:\\bfrom\\s*|\\bimport\\s*\\(\\s*|^\\s*import\\s+)['"]${escaped}(?:/[^'"]*)?['"]`, 'gm');
    return [...text.matchAll(re)].map(
      (m) => `${file}:${text.slice(0, m.index).split('\n').length} imports ${name}: only ${owner}/ may`,
    );
  });
}

describe('packages owned by one folder', () => {
  it('has no import of oidc-provider outside devidp/', () => {
    // The check finds the owner's own import when it is read as another folder's file.
    const owner = readFileSync(join(ROOT, 'devidp/provider.ts'), 'utf8');
    expect(packageViolations('sidecar/provider.ts', owner)).toHaveLength(1);
    expect(inProductFiles(packageViolations)).toEqual([]);
  });

  it('refuses static, type-only, sub-path and dynamic imports, and allows them in the owner', () => {
    const refused = [
      "import Provider from 'oidc-provider';",
      "import type { Adapter } from 'oidc-provider';",
      "export { errors } from 'oidc-provider/lib/helpers/errors.js';",
      "const { default: Provider } = await import('oidc-provider');",
    ];
    for (const text of refused) {
      expect(packageViolations('sidecar/a.ts', `// x\n${text}\n`), text).toEqual([
        'sidecar/a.ts:2 imports oidc-provider: only devidp/ may',
      ]);
    }
    expect(packageViolations('sidecar/a.ts', "import x from 'oidc-provider-extra';")).toEqual([]);
    expect(packageViolations('devidp/provider.ts', "import Provider from 'oidc-provider';")).toEqual([]);
  });
});
