import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { measureGate, type GateFigures } from '../bench/lib/gate.ts';

/**
 * The recorded ratios: medians of runs on the 2-core machine at a load average of 13–30
 * (2026-11-27; CPU and RSS ten runs, start-up CPU five), the range of the runs in each comment.
 */

/**
 * The benchmark regression gate (docs/benchmarks.md, "Regression gate"): `svc frontend` against a
 * bare Node `http.request` pipe in the same run, as ratios, so a loaded or slower machine moves both
 * sides alike. It fails only on a clear regression: a ratio above twice the one recorded here.
 */
const RECORDED = {
  /** Frontend CPU per request ÷ the bare pipe's, an authenticated GET on the fast path (runs: 0.36–0.60). */
  cpuRatio: 0.46,
  /** Peak RSS of the frontend ÷ the bare pipe's after the same load (runs: 0.83–0.87). */
  rssRatio: 0.84,
  /** CPU from spawn to ready of the frontend ÷ the bare pipe's, started together (runs: 0.74–0.79). */
  startupRatio: 0.78,
} as const;

/** How far above the recorded ratio a run may land before the gate calls it a regression. */
const MARGIN = 2;

const RESULTS = join(import.meta.dirname, '..', 'test-results', 'bench-gate.json');

describe('benchmark regression gate', () => {
  let figures: GateFigures;

  it('measures the frontend and the bare pipe under the same load at the same time', { timeout: 120_000 }, async () => {
    figures = await measureGate({ rounds: 5, durationSeconds: 2, connections: 16 });
    mkdirSync(join(RESULTS, '..'), { recursive: true });
    writeFileSync(RESULTS, `${JSON.stringify({ recorded: RECORDED, margin: MARGIN, figures }, null, 2)}\n`);
    process.stdout.write(`bench gate: ${JSON.stringify(figures)}\n`);
    expect(figures.cpuRatios).toHaveLength(5);
  });

  it.each(Object.keys(RECORDED) as (keyof typeof RECORDED)[])('%s stays under twice its recorded value', (key) => {
    expect(figures[key], `${key} (recorded ${RECORDED[key]})`).toBeLessThan(RECORDED[key] * MARGIN);
  });
});
