/** A dependency-free SVG bar chart for the benchmark reports (one horizontal bar per row). */
export interface Bar {
  readonly label: string;
  readonly value: number | undefined;
}

export interface ChartPanel {
  readonly title: string;
  readonly unit: string;
  readonly bars: readonly Bar[];
}

const ROW = 22;
const LABEL_WIDTH = 330;
const BAR_WIDTH = 360;
const PANEL_GAP = 36;

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Panels stacked vertically, each scaled to its own largest value; missing values are left blank. */
export function barChartSvg(title: string, panels: readonly ChartPanel[]): string {
  const width = LABEL_WIDTH + BAR_WIDTH + 110;
  const parts: string[] = [];
  let y = 34;
  for (const panel of panels) {
    parts.push(`<text x="10" y="${y}" font-weight="bold">${escape(panel.title)}</text>`);
    y += 10;
    const max = Math.max(...panel.bars.map((b) => b.value ?? 0), 1);
    for (const bar of panel.bars) {
      const w = bar.value === undefined ? 0 : Math.max(1, (bar.value / max) * BAR_WIDTH);
      const text = bar.value === undefined ? '–' : `${Math.round(bar.value).toLocaleString('en-US')} ${panel.unit}`;
      parts.push(
        `<text x="${LABEL_WIDTH - 8}" y="${y + 15}" text-anchor="end">${escape(bar.label)}</text>`,
        `<rect x="${LABEL_WIDTH}" y="${y + 4}" width="${w.toFixed(1)}" height="${ROW - 6}" fill="#4a7bb7"/>`,
        `<text x="${LABEL_WIDTH + w + 6}" y="${y + 15}">${escape(text)}</text>`,
      );
      y += ROW;
    }
    y += PANEL_GAP;
  }
  const height = y - PANEL_GAP + 14;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="18" font-size="14" font-weight="bold">${escape(title)}</text>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
