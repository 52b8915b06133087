import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Figures of the adversarial and fault suites, counted while the tests run (never typed in by
 * hand): each suite writes `test-results/security/<suite>.json`, and
 * `npm run security:figures` turns them into the tables of docs/security.md.
 */
export const FIGURES_DIR = resolve(
  process.env.SVC_FIGURES_DIR ?? join(import.meta.dirname, '../../test-results/security'),
);

export interface AttackFigure {
  /** Attack class, as a row of the table. */
  readonly attack: string;
  readonly tried: number;
  /** Cases where the defence held (the test fails when this is below `tried`). */
  readonly held: number;
  /** What this issue had to fix for the class to hold; empty when it held before. */
  readonly fixed: string;
}

export interface FaultFigure {
  readonly fault: string;
  readonly injections: number;
  readonly outcome: string;
  /** Acknowledged data lost (must be 0). */
  readonly lost: number;
}

export interface Measurement {
  readonly name: string;
  readonly value: number | string;
}

/** Counts the cases of one attack class as they run. */
export interface AttackTally {
  /** Runs one case: tried always, held when `check` completes without throwing. */
  run<T>(check: () => Promise<T> | T): Promise<T>;
}

export interface SuiteFigures {
  attack(figure: AttackFigure): void;
  /** A class whose cases are counted by `run`; `fixed` says what this issue changed for it. */
  attackClass(attack: string, fixed?: string): AttackTally;
  fault(figure: FaultFigure): void;
  measure(name: string, value: number | string): void;
  /** Writes the suite's file; call in afterAll. */
  write(): void;
}

/** A collector for one test file; a row recorded twice (same class) keeps the last value. */
export function suiteFigures(suite: string): SuiteFigures {
  const attacks = new Map<string, AttackFigure>();
  const faults = new Map<string, FaultFigure>();
  const measurements = new Map<string, Measurement>();
  return {
    attack: (f) => void attacks.set(f.attack, f),
    attackClass(attack, fixed = '') {
      const row = { attack, tried: 0, held: 0, fixed };
      attacks.set(attack, row);
      return {
        async run(check) {
          row.tried += 1;
          const result = await check();
          row.held += 1;
          return result;
        },
      };
    },
    fault: (f) => void faults.set(f.fault, f),
    measure: (name, value) => void measurements.set(name, { name, value }),
    write() {
      const doc = {
        suite,
        recordedAt: new Date().toISOString(),
        attacks: [...attacks.values()],
        faults: [...faults.values()],
        measurements: [...measurements.values()],
      };
      mkdirSync(FIGURES_DIR, { recursive: true });
      writeFileSync(join(FIGURES_DIR, `${suite}.json`), `${JSON.stringify(doc, null, 2)}\n`);
      // Also in the test output, so a CI log carries the figures of its own run.
      console.log(`[security figures] ${JSON.stringify(doc)}`);
    },
  };
}
