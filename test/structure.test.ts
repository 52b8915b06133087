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
  // Composition roots: they build processes out of the roles.
  serve: ['lib', 'sidecar', 'agent', 'controller'],
  cli: ['lib', 'sidecar', 'agent', 'controller', 'operator', 'serve'],
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
