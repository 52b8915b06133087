import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OAUTH_KEYS, TOP_KEYS } from '../lib/config/frontend.ts';
import { PROVIDER_KEYS } from '../lib/config/providers.ts';
import { SHARE_KEYS } from '../lib/share/spec.ts';

/** The README's configuration reference is checked against the parser's key lists, so they cannot drift. */
describe('README configuration reference', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

  it.each([...OAUTH_KEYS, ...PROVIDER_KEYS, ...SHARE_KEYS, ...TOP_KEYS])('documents `%s`', (key) => {
    expect(readme).toContain(`\`${key}\``);
  });

  it('names the two set-up commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });
});

/** docs/benchmarks.md is read in five minutes: current tables only, the history in its own file. */
describe('docs/benchmarks.md', () => {
  it('stays under 400 lines', () => {
    const lines = readFileSync(new URL('../docs/benchmarks.md', import.meta.url), 'utf8').split('\n').length;
    expect(lines).toBeLessThan(400);
  });
});
