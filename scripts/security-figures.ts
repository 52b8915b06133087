/**
 * Prints the figure tables of docs/security.md from the files the adversarial and fault suites
 * write while they run (test-results/security/*.json, see test/support/figures.ts):
 *
 *   npx vitest run test/adversarial test/faults test/controller/forged-commands.test.ts
 *   npm run security:figures
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIGURES_DIR, type AttackFigure, type FaultFigure, type Measurement } from '../test/support/figures.ts';

interface SuiteFile {
  readonly suite: string;
  readonly recordedAt: string;
  readonly attacks: AttackFigure[];
  readonly faults: FaultFigure[];
  readonly measurements: Measurement[];
}

const suites: SuiteFile[] = readdirSync(FIGURES_DIR)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(FIGURES_DIR, f), 'utf8')) as SuiteFile);

const cell = (text: string | number): string => String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
const row = (cells: (string | number)[]): string => `| ${cells.map(cell).join(' | ')} |`;
const lines: string[] = [];

lines.push('### Attacks', '', row(['Attack class', 'Cases tried', 'Held', 'Fixed in this issue', 'Suite']));
lines.push(row(['---', '---:', '---:', '---', '---']));
let tried = 0;
let held = 0;
for (const s of suites) {
  for (const a of s.attacks) {
    tried += a.tried;
    held += a.held;
    lines.push(row([a.attack, a.tried, a.held, a.fixed || '—', s.suite]));
  }
}
lines.push(row(['**Total**', `**${tried}**`, `**${held}**`, '', '']), '');

lines.push('### Faults', '', row(['Fault class', 'Injections', 'Outcome', 'Data lost', 'Suite']));
lines.push(row(['---', '---:', '---', '---:', '---']));
for (const s of suites) {
  for (const f of s.faults) lines.push(row([f.fault, f.injections, f.outcome, f.lost, s.suite]));
}
lines.push('');

lines.push('### Measurements', '', row(['Measurement', 'Value', 'Suite']), row(['---', '---', '---']));
for (const s of suites) for (const m of s.measurements) lines.push(row([m.name, m.value, s.suite]));
lines.push('');

const dates = suites.map((s) => s.recordedAt).sort();
lines.push(`Recorded ${dates[0] ?? '—'} … ${dates.at(-1) ?? '—'} (${suites.length} suites).`);
process.stdout.write(`${lines.join('\n')}\n`);
