import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The repository root. */
export const ROOT = join(import.meta.dirname, '..', '..');

/** The languages of fenced blocks that hold commands. */
const SHELL = new Set(['sh', 'bash', 'shell', 'console']);

/**
 * One fenced shell block of the documentation. Its fence carries what the docs test does with it:
 * ```` ```sh test=<scenario> on=<machine> ```` runs it in that scenario (on that machine, default the
 * scenario's first), ```` ```sh no-test: <reason> ```` names why no test can run it.
 */
export interface ShellBlock {
  /** `README.md` or `docs/<name>.md`. */
  readonly file: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly scenario?: string;
  readonly machine?: string;
  readonly noTest?: string;
  /** The lines between the fences, with the fence's indentation removed. */
  readonly body: string;
  /** The text after the language on the fence, for error messages. */
  readonly info: string;
}

/** The markdown files whose commands are run: README.md and docs/*.md. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => join('docs', name));
  return ['README.md', ...docs];
}

/** Every fenced shell block of `file` (relative to the root), in order. */
export function shellBlocks(file: string): ShellBlock[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)(`{3,})(\S*)\s*(.*)$/.exec(lines[i] as string);
    if (!open) continue;
    const [, indent = '', fence = '', lang = '', info = ''] = open;
    const end = lines.findIndex((l, j) => j > i && l.trim() === fence);
    if (end < 0) throw new Error(`${file}:${i + 1}: fence never closed`);
    if (SHELL.has(lang)) {
      const body = lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join('\n');
      blocks.push({ file: relative(ROOT, join(ROOT, file)), line: i + 1, body, info, ...annotations(info) });
    }
    i = end;
  }
  return blocks;
}

/** Every shell block of README.md and docs/*.md. */
export function allShellBlocks(): ShellBlock[] {
  return documentationFiles().flatMap(shellBlocks);
}

function annotations(info: string): Pick<ShellBlock, 'scenario' | 'machine' | 'noTest'> {
  const noTest = /^no-test:\s*(.+)$/.exec(info)?.[1];
  if (noTest) return { noTest };
  const scenario = /(?:^|\s)test=(\S+)/.exec(info)?.[1];
  const machine = /(?:^|\s)on=(\S+)/.exec(info)?.[1];
  return { ...(scenario ? { scenario } : {}), ...(machine ? { machine } : {}) };
}

/** The blocks of one scenario, in document order (README.md first, then docs/ by name). */
export function scenarioBlocks(scenario: string): ShellBlock[] {
  return allShellBlocks().filter((b) => b.scenario === scenario);
}

/**
 * `block` cut before its first line that starts with `marker`, so a test can look at the state
 * between the two parts (e.g. a listener a later command of the block removes).
 */
export function splitBefore(block: ShellBlock, marker: string): [ShellBlock, ShellBlock] {
  const lines = block.body.split('\n');
  const at = lines.findIndex((l) => l.startsWith(marker));
  if (at < 0) throw new Error(`${block.file}:${block.line}: no line starts with ${JSON.stringify(marker)}`);
  const part = (from: number, to: number, offset: number): ShellBlock => ({
    ...block,
    line: block.line + offset,
    body: lines.slice(from, to).join('\n'),
  });
  return [part(0, at, 0), part(at, lines.length, at)];
}
