/**
 * Polls `probe` every `everyMs` until it returns something other than `undefined` or `false`. A
 * probe that throws counts as "not yet" (a server still starting); its last error is named in the
 * timeout so a failure says what was seen, not only what was awaited.
 */
export async function until<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  ms = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last instanceof Error ? ` (last error: ${last.message})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
