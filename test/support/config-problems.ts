import { ConfigError, problemText } from '../../lib/errors.ts';

/** The problems (`path: message`) of the ConfigError `load` throws; none when it succeeds. */
export function configProblems(load: () => unknown): string[] {
  try {
    load();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map(problemText);
    throw err;
  }
  return [];
}
