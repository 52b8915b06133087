const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(?:(\d+)(ms|s|m|h|d))+$/;
const PART = /(\d+)(ms|s|m|h|d)/g;

/**
 * Parses Go-style duration strings as the seed writes them (`5m`, `6h`, `24h`, `1h30m`).
 * Returns milliseconds, or undefined when the text is not a positive duration.
 */
export function parseDuration(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(PART)) {
    total += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return total > 0 && Number.isSafeInteger(total) ? total : undefined;
}

/** Formats milliseconds back into the shortest duration string (`3h`, `90s`). */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
