/**
 * Errors nothing caught in this test process, as they happen (`uncaughtExceptionMonitor`): in the
 * product's own process (a frontend, an agent, a controller) each would have ended it, with every
 * other account in it. A test of a hostile input asserts the list stays empty.
 */
export function uncaughtErrors(): readonly string[] {
  const seen: string[] = [];
  process.on('uncaughtExceptionMonitor', (err) => seen.push(err.message));
  return seen;
}
