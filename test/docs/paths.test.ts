/**
 * Every file of this repository that README.md and docs/*.md name exists, so a rename or a removal
 * cannot leave a reader looking for it: each backticked path that starts with one of the
 * repository's folders (`sidecar/fast-path/fast-path.ts`, `agent/web/{server,pages}.ts`,
 * `test/tunnel/*.websocket.test.ts`: braces and `*` must match at least one file each), and each
 * relative Markdown link. Fenced blocks are left to the walkthrough tests.
 */
import { existsSync, globSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { documentationFiles, ROOT } from './blocks.ts';

/**
 * Documents whose paths are a record, not a map: the benchmark history names the files each round
 * measured, some of which have since been removed or renamed.
 */
const RECORDS = new Set(['docs/benchmarks-history.md']);

/** The repository's own top-level folders: what git keeps, not what a run or an install leaves. */
function repositoryFolders(): Set<string> {
  const ignored = new Set(
    readFileSync(join(ROOT, '.gitignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim().replace(/\/$/, '')),
  );
  return new Set(
    readdirSync(ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !ignored.has(e.name))
      .map((e) => e.name),
  );
}

/** A path a document names, and where. */
interface NamedPath {
  readonly file: string;
  readonly line: number;
  /** Relative to the repository root. */
  readonly path: string;
}

/** The text with each fenced block blanked out, line numbers kept. */
function withoutFences(text: string): string {
  let inFence = false;
  return text
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

/** The backticked repository paths and the relative link targets of one document. */
function namedPaths(file: string, text: string, folders: ReadonlySet<string>): NamedPath[] {
  const found: NamedPath[] = [];
  withoutFences(text)
    .split('\n')
    .forEach((lineText, i) => {
      for (const m of lineText.matchAll(/`([^`\s]+)`/g)) {
        const path = (m[1] as string).replace(/[:,.;]$/, '');
        if (folders.has(path.split('/')[0] as string) && path.includes('/')) found.push({ file, line: i + 1, path });
      }
      for (const m of lineText.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = (m[1] as string).replace(/#.*$/, '');
        if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        found.push({ file, line: i + 1, path: normalize(join(dirname(file), target)) });
      }
    });
  return found;
}

/** `a/{b,c}.ts` → `a/b.ts`, `a/c.ts` (one level of braces, as the docs write them). */
function expandBraces(path: string): string[] {
  const m = /^(.*?)\{([^{}]*)\}(.*)$/.exec(path);
  if (!m) return [path];
  const [, before, choices, after] = m as unknown as [string, string, string, string];
  return choices.split(',').flatMap((choice) => expandBraces(`${before}${choice}${after}`));
}

/** Whether the path (each of its brace choices) names something in the repository. */
function exists(path: string): boolean {
  return expandBraces(path).every((one) =>
    one.includes('*') ? globSync(one, { cwd: ROOT }).length > 0 : existsSync(join(ROOT, one)),
  );
}

describe('paths named in README.md and docs/*.md', () => {
  const folders = repositoryFolders();
  const named = documentationFiles()
    .filter((file) => !RECORDS.has(file))
    .flatMap((file) => namedPaths(file, readFileSync(join(ROOT, file), 'utf8'), folders));

  it('finds the paths of the map and the walkthroughs', () => {
    expect(folders).toContain('sidecar');
    expect(folders).not.toContain('node_modules');
    expect(named.length).toBeGreaterThan(300);
    expect(named).toContainEqual(expect.objectContaining({ file: 'docs/design.md', path: 'operator/main.ts' }));
  });

  it('names only files and folders that exist', () => {
    const missing = named.filter((n) => !exists(n.path)).map((n) => `${n.file}:${n.line} names ${n.path}`);
    expect(missing).toEqual([]);
  });

  it('reads backticked paths, braces, globs and links, and leaves fences and other code alone', () => {
    const text = [
      'See `sidecar/proxy.ts`, `agent/{a,b}.ts` and [the report](benchmarks/frontend.md#top).',
      '`npm test`, `Path=/`, `/agent/share`, [site](https://example.com), `ws/x.ts`',
      '```sh',
      'cat `lib/in-a-fence.ts`',
      '```',
    ].join('\n');
    expect(namedPaths('docs/x.md', text, new Set(['sidecar', 'agent', 'lib'])).map((n) => n.path)).toEqual([
      'sidecar/proxy.ts',
      'agent/{a,b}.ts',
      'docs/benchmarks/frontend.md',
    ]);
    expect(expandBraces('agent/{a,b}.ts')).toEqual(['agent/a.ts', 'agent/b.ts']);
    expect(exists('sidecar/{proxy,frontend}.ts')).toBe(true);
    expect(exists('sidecar/{proxy,no-such-file}.ts')).toBe(false);
    expect(exists('test/tunnel/*.websocket.test.ts')).toBe(true);
  });
});
