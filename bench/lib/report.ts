/** Plain-text reporting helpers shared by the benchmarks. */

/** A Markdown table with padded columns (readable in a terminal, pasteable into docs). */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${widths.map((w, i) => (cells[i] ?? '').padEnd(w)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** A number with a fixed count of decimals, or '-' when absent. */
export function fixed(value: number | undefined, decimals: number): string {
  return value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(decimals);
}

/** `value / base` as `0.42×`, or '-' when either is missing or zero. */
export function ratio(value: number | undefined, base: number | undefined): string {
  if (value === undefined || base === undefined || base === 0) return '-';
  return `${(value / base).toFixed(2)}×`;
}

/** KiB as MiB with one decimal. */
export function mib(kib: number | undefined): string {
  return kib === undefined ? '-' : `${(kib / 1024).toFixed(1)} MiB`;
}
