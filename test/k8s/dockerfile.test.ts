/**
 * Docker cannot build here (no engine), so this checks what the build would produce: the files
 * .dockerignore lets into the build context hold every module `bin/svc.js` loads, the runtime never
 * imports a devDependency (the image installs with --omit=dev), and the image runs as a numeric
 * non-root user on the Node major the project is developed with.
 */
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

/** Go filepath.Match semantics as Docker uses them (`*` matches dot files too), plus `**`. */
function matchesGlob(path: string, pattern: string): boolean {
  const re = pattern
    .split(/(\*\*\/?|\*|\?)/)
    .map((part) => {
      if (part === '**/') return '(?:.*/)?';
      if (part === '**') return '.*';
      if (part === '*') return '[^/]*';
      if (part === '?') return '[^/]';
      return part.replace(/[.+^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return new RegExp(`^${re}$`).test(path);
}

/** Docker's .dockerignore rules: the last matching pattern wins; a pattern matching a directory covers its contents. */
function inBuildContext(path: string): boolean {
  const rules = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const parts = path.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let included = true;
  for (const rule of rules) {
    const negated = rule.startsWith('!');
    const pattern = (negated ? rule.slice(1) : rule).replace(/\/$/, '');
    if (prefixes.some((p) => matchesGlob(p, pattern))) included = negated;
  }
  return included;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every source file reachable from the entry point, and every bare package it imports. */
function runtimeGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const match of text.matchAll(IMPORT)) {
      const spec = match[1] ?? match[2]!;
      if (spec.startsWith('.')) {
        const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
        if (!existsSync(join(ROOT, target))) throw new Error(`${file} imports missing ${spec}`);
        queue.push(target);
      } else if (!spec.startsWith('node:') && !builtinModules.includes(spec)) {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
    }
  }
  return { files, packages };
}

describe('container image (Dockerfile + .dockerignore)', () => {
  const graph = runtimeGraph('bin/svc.js');

  it('has every runtime module in the build context', () => {
    expect(graph.files.size).toBeGreaterThan(5);
    expect([...graph.files].filter((f) => !inBuildContext(f))).toEqual([]);
  });

  it('keeps tests, docs, charts and host node_modules out of the build context', () => {
    for (const path of [
      'cli/main.test.ts',
      'test/k8s/envtest.ts',
      'docs/kubernetes.md',
      'charts/svc/Chart.yaml',
      'node_modules/yaml/package.json',
      '.git/HEAD',
    ]) {
      expect(inBuildContext(path), path).toBe(false);
    }
    expect(inBuildContext('package-lock.json')).toBe(true);
  });

  it('runs every svc process with two malloc arenas and 2 MiB semi-spaces (measured: docs/benchmarks.md)', () => {
    const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(finalStage).toMatch(/^ENV MALLOC_ARENA_MAX=2$/m);
    expect(finalStage).toMatch(/^ENV NODE_OPTIONS=--max-semi-space-size=2$/m);
  });

  it('imports only production dependencies at runtime (npm ci --omit=dev)', () => {
    const notProd = [...graph.packages].filter((p) => !(p in pkg.dependencies));
    expect(notProd).toEqual([]);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
  });

  it('runs bin/svc.js as a numeric non-root user on the project Node major', () => {
    const nodeMajor = pkg.devDependencies.node!.replace(/^\D*/, '').split('.')[0];
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toBe(`node:${nodeMajor}-slim`);
    const user = /^USER\s+(\d+)(?::(\d+))?\s*$/m.exec(dockerfile);
    expect(user?.[1]).toBeDefined();
    expect(Number(user?.[1])).toBeGreaterThan(0);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", (?:"--[a-z-]+", )*"\/app\/bin\/svc\.js"\]$/m);
  });

  it('fills the compile cache with the Node flags of its entrypoint (the cache is keyed by them)', () => {
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
    const flags = entrypoint.slice(1, -1);
    expect(flags).toContain('--no-maglev');
    expect(flags).toContain('--no-parallel-scavenge');
    expect(dockerfile).toMatch(new RegExp(`^RUN node ${flags.join(' ')} bin/warm-compile-cache\\.js$`, 'm'));
  });
});
