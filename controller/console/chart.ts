import { trafficTotals, type TrafficMinute } from '../../lib/share/traffic.ts';
import { html, type Html } from '../../lib/web/html.ts';

const WIDTH = 240;
const HEIGHT = 48;

/**
 * A share's last hour as a small inline SVG: one bar per minute for requests (errors in their own
 * colour on top of it) and a line for bytes, each scaled to its own maximum. The figures are in the
 * `<title>` and the totals beside the chart, so the chart is never the only way to read them.
 */
export function trafficChart(minutes: readonly TrafficMinute[]): Html {
  const slot = WIDTH / Math.max(1, minutes.length);
  const maxRequests = Math.max(1, ...minutes.map((m) => m.requests));
  const bytes = minutes.map((m) => m.bytesIn + m.bytesOut);
  const maxBytes = Math.max(1, ...bytes);
  const y = (value: number, max: number) => HEIGHT - (value / max) * (HEIGHT - 2);
  const bars = minutes.map((m, i) => {
    if (m.requests === 0) return '';
    const top = y(m.requests, maxRequests);
    const errorTop = y(m.errors, maxRequests);
    return html`<rect
        class="req"
        x="${(i * slot).toFixed(1)}"
        y="${top.toFixed(1)}"
        width="${(slot - 0.5).toFixed(1)}"
        height="${(HEIGHT - top).toFixed(1)}"
      ></rect
      >${
        m.errors > 0
          ? html`<rect
              class="err"
              x="${(i * slot).toFixed(1)}"
              y="${errorTop.toFixed(1)}"
              width="${(slot - 0.5).toFixed(1)}"
              height="${(HEIGHT - errorTop).toFixed(1)}"
            ></rect>`
          : ''
      }`;
  });
  const line = bytes.map((b, i) => `${(i * slot + slot / 2).toFixed(1)},${y(b, maxBytes).toFixed(1)}`).join(' ');
  const totals = trafficTotals(minutes);
  return html`<svg
    xmlns="http://www.w3.org/2000/svg"
    class="chart"
    viewBox="0 0 ${WIDTH} ${HEIGHT}"
    width="${WIDTH}"
    height="${HEIGHT}"
    role="img"
    aria-label="${trafficSummary(totals)}"
  >
    <title>${trafficSummary(totals)}</title>
    <line class="axis" x1="0" y1="${HEIGHT - 0.5}" x2="${WIDTH}" y2="${HEIGHT - 0.5}"></line>
    ${bars}
    <polyline class="bytes" points="${line}"></polyline>
  </svg>`;
}

/** "12 requests, 3.4 KB, 1 error in the last hour". */
export function trafficSummary(totals: ReturnType<typeof trafficTotals>): string {
  const errors = `${totals.errors} error${totals.errors === 1 ? '' : 's'}`;
  const requests = `${totals.requests} request${totals.requests === 1 ? '' : 's'}`;
  return `${requests}, ${formatBytes(totals.bytesIn + totals.bytesOut)}, ${errors} in the last hour`;
}

/** Bytes in B, KB, MB or GB (powers of 1024), one decimal from KB on. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
