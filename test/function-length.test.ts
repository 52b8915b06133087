/**
 * No product function over 80 lines: every function-like node with a body (declarations, methods,
 * constructors, accessors, function expressions and arrow functions) in the product folders,
 * measured from its first to its last line with the TypeScript parser. A longer one fails here with
 * its file, line, name and length, unless it is in EXCEPTIONS with a reason; an exception that no
 * longer applies fails too, so the list only shrinks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
const PRODUCT = ['lib', 'sidecar', 'agent', 'controller', 'operator', 'devidp', 'serve', 'cli', 'bin'];
const MAX_LINES = 80;

/** Functions allowed over MAX_LINES, by `<file> <function name>`, each with why. */
const EXCEPTIONS: Record<string, string> = {};

interface LongFunction {
  /** `<file> <name>`, the key of EXCEPTIONS. */
  readonly key: string;
  readonly line: number;
  readonly lines: number;
}

/** The name a reader finds a function by: its own, or the variable or property it is assigned to. */
function functionName(node: ts.SignatureDeclaration): string {
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText();
  return `<anonymous ${ts.SyntaxKind[node.kind]}>`;
}

/** Every function in `text` longer than MAX_LINES, first to last line. */
function longFunctions(file: string, text: string): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > MAX_LINES) found.push({ key: `${file} ${functionName(node)}`, line: first + 1, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function productFiles(): string[] {
  return PRODUCT.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
      .map((e) => relative(ROOT, join(e.parentPath, e.name)).split('\\').join('/')),
  );
}

describe('function length', () => {
  const files = productFiles();
  const long = files.flatMap((f) => longFunctions(f, readFileSync(join(ROOT, f), 'utf8')));

  it('reads every product file', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('operator/operator.ts');
    expect(files.some((f) => f.endsWith('.test.ts'))).toBe(false);
  });

  it(`has no function over ${MAX_LINES} lines outside the exceptions`, () => {
    const over = long
      .filter((f) => !(f.key in EXCEPTIONS))
      .map((f) => `${f.key.replace(' ', `:${f.line} `)} is ${f.lines} lines (at most ${MAX_LINES}): split it`);
    expect(over).toEqual([]);
  });

  it('has no exception that no longer applies', () => {
    const stale = Object.keys(EXCEPTIONS)
      .filter((key) => !long.some((f) => f.key === key))
      .map((key) => `${key} is no longer over ${MAX_LINES} lines (or gone): remove its exception`);
    expect(stale).toEqual([]);
  });

  it('gives every exception a reason', () => {
    expect(Object.entries(EXCEPTIONS).filter(([, reason]) => reason.trim() === '')).toEqual([]);
  });

  it('measures first to last line and names functions by what they are assigned to', () => {
    const body = (n: number): string => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      `export function fits(): void {\n${body(MAX_LINES)}\n}`,
      `const arrow = (): void => {\n${body(MAX_LINES + 1)}\n};`,
      `class C {\n  method(): void {\n${body(MAX_LINES + 1)}\n  }\n}`,
      `const o = { prop: function (): void {\n${body(MAX_LINES + 1)}\n} };`,
      `function outer(): void {\n  setTimeout(() => {\n${body(MAX_LINES + 1)}\n  });\n}`,
    ].join('\n');
    const found = longFunctions('lib/x.ts', text);
    expect(found.map((f) => [f.key, f.lines])).toEqual([
      ['lib/x.ts arrow', MAX_LINES + 1],
      ['lib/x.ts method', MAX_LINES + 1],
      ['lib/x.ts prop', MAX_LINES + 1],
      ['lib/x.ts outer', MAX_LINES + 3],
      ['lib/x.ts <anonymous ArrowFunction>', MAX_LINES + 1],
    ]);
    expect(found[0]?.line).toBe(MAX_LINES + 1);
  });
});
