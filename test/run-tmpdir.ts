/**
 * Vitest global setup: the run gets a temporary directory of its own, made TMPDIR for the test
 * workers and every process they start, and removed when the run ends. Test files make scratch
 * directories under `os.tmpdir()` (stores, configs, data dirs of the servers they start); with this,
 * none of them outlives the run, including those of a test that failed before its own clean-up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  process.env.TMPDIR = dir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch (err) {
      // A mount left busy by a crashed cluster process: say where, rather than fail a passing run.
      process.stderr.write(`could not remove the test run's ${dir}: ${(err as Error).message}\n`);
    }
  };
}
