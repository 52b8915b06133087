import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allShellBlocks, documentationFiles, ROOT } from './blocks.ts';

/** Which scenarios the test files of test/docs/ run (`scenarioBlocks('<name>')`). */
function scenariosRun(): Set<string> {
  const dir = join(ROOT, 'test', 'docs');
  const text = readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
  return new Set([...text.matchAll(/scenarioBlocks\('([^']+)'\)/g)].map((m) => m[1] as string));
}

/** The first word of a command a reader would run, in a fence that names no language. */
const COMMAND = /^(?:\$ )?(?:npm|npx|node_modules\/\.bin\/\S+|bash|sh|curl|kubectl|helm|docker)\s/;

describe('the commands of README.md and docs/*.md', () => {
  const blocks = allShellBlocks();
  const run = scenariosRun();

  it('finds shell blocks in the README and the docs', () => {
    expect(blocks.filter((b) => b.file === 'README.md').length).toBeGreaterThan(5);
    expect(new Set(blocks.map((b) => b.file)).size).toBeGreaterThan(4);
  });

  it.each(blocks.map((b) => [`${b.file}:${b.line}`, b] as const))(
    '%s is run by a test or says why it cannot be',
    (_, block) => {
      if (block.noTest !== undefined) {
        expect(block.noTest.length, 'a no-test block names its reason').toBeGreaterThan(10);
        return;
      }
      expect(block.scenario, `fence "${block.info}": test=<scenario> on=<machine>, or no-test: <reason>`).toBeDefined();
      expect(block.machine, `fence "${block.info}" names no machine (on=…)`).toBeDefined();
      expect(run, `no test in test/docs/ runs scenario ${block.scenario}`).toContain(block.scenario);
    },
  );

  it('no command hides in a fence without a language', () => {
    const hidden = documentationFiles().flatMap((file) => {
      const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
      return lines.flatMap((line, i) =>
        /^ *```$/.test(line) && COMMAND.test((lines[i + 1] ?? '').trim()) && !/^ *```$/.test(lines[i - 1] ?? 'x')
          ? [`${file}:${i + 1}`]
          : [],
      );
    });
    expect(hidden).toEqual([]);
  });
});
