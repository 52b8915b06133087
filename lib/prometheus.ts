/**
 * Prometheus metrics in the text exposition format (version 0.0.4): counters, gauges and
 * histograms with labels, kept in a registry that writes them at a scrape.
 *
 * svc's own rather than prom-client: svc uses these three types and a few process metrics, and a
 * share sidecar counts every proxied request. prom-client hashed the label object at each call and
 * its default collectors observed every garbage collection; without its default collectors the
 * frontend's CPU per request fell by 5 % and its peak RSS by 2.6 MiB (alternating pairs, docs/benchmarks-history.md).
 * Nothing here runs between scrapes: values computed from the process are read when scraped.
 */

export type LabelValues<L extends string> = Readonly<Record<L, string | number>>;

/** One series of a metric: its label values by name, and its value (a histogram's count). */
export interface Sample<L extends string> {
  readonly labels: LabelValues<L>;
  readonly value: number;
}

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatValue(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  if (Number.isNaN(value)) return 'NaN';
  return String(value);
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** What every metric type shares: its name, help, label names, and its series keyed by label values. */
abstract class Metric<L extends string, S> {
  protected readonly series = new Map<string, { readonly labels: LabelValues<L>; state: S }>();

  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Called at each scrape before the values are written (for values read from the process). */
  private readonly collect: (() => void | Promise<void>) | undefined;

  constructor(name: string, help: string, labelNames: readonly L[] = [], collect?: () => void | Promise<void>) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
    this.collect = collect;
    if (!NAME.test(name)) throw new Error(`metric name "${name}" is not a Prometheus name`);
    for (const label of labelNames)
      if (!LABEL_NAME.test(label) || label === 'le' || label.startsWith('__'))
        throw new Error(`metric ${name}: label name "${label}" is not allowed`);
  }

  abstract readonly type: 'counter' | 'gauge' | 'histogram';

  protected abstract initial(): S;

  /** The series for these label values, created at first use. Every declared label must be given. */
  protected entry(labels: Partial<LabelValues<L>> | undefined): { state: S } {
    const names = this.labelNames;
    let key = '';
    if (names.length > 0) {
      if (!labels) throw new Error(`metric ${this.name}: labels ${names.join(', ')} are required`);
      for (let i = 0; i < names.length; i++) {
        const value = labels[names[i] as L];
        if (value === undefined) throw new Error(`metric ${this.name}: label ${names[i]} is missing`);
        key = i === 0 ? String(value) : `${key}\u0000${String(value)}`;
      }
    }
    let found = this.series.get(key);
    if (!found) {
      const own = Object.fromEntries(names.map((n) => [n, String(labels?.[n])])) as LabelValues<L>;
      for (const name of Object.keys(labels ?? {}))
        if (!names.includes(name as L)) throw new Error(`metric ${this.name}: unknown label ${name}`);
      found = { labels: own, state: this.initial() };
      this.series.set(key, found);
    }
    return found;
  }

  /** `{a="1",b="2"` without the closing brace (histograms append `le`), or '' for no labels. */
  protected labelText(labels: LabelValues<L>): string {
    const parts = this.labelNames.map((n) => `${n}="${escapeLabel(String(labels[n]))}"`);
    return parts.length > 0 ? `{${parts.join(',')}` : '';
  }

  async write(): Promise<string> {
    await this.collect?.();
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    // An unlabeled metric nobody has touched is 0, as Prometheus clients write it; one whose value
    // is read at the scrape and was not known (not Linux) is left out instead.
    if (!this.collect && this.labelNames.length === 0 && this.series.size === 0) this.entry(undefined);
    for (const { labels, state } of this.series.values()) this.writeSeries(lines, labels, state);
    return `${lines.join('\n')}\n`;
  }

  protected abstract writeSeries(lines: string[], labels: LabelValues<L>, state: S): void;

  /** Forgets every series (a gauge whose label values come and go is rebuilt at each scrape). */
  reset(): void {
    this.series.clear();
  }
}

/** A single number per series, as counters and gauges keep it. */
abstract class ScalarMetric<L extends string> extends Metric<L, { value: number }> {
  protected initial(): { value: number } {
    return { value: 0 };
  }

  protected writeSeries(lines: string[], labels: LabelValues<L>, state: { value: number }): void {
    const text = this.labelText(labels);
    lines.push(`${this.name}${text ? `${text}}` : ''} ${formatValue(state.value)}`);
  }

  values(): Sample<L>[] {
    return [...this.series.values()].map(({ labels, state }) => ({ labels, value: state.value }));
  }
}

/** Picks the `(labels, value)` or `(value)` call form apart. */
function labelsAndValue<L extends string>(
  first: Partial<LabelValues<L>> | number | undefined,
  second: number | undefined,
  fallback: number,
): [Partial<LabelValues<L>> | undefined, number] {
  return typeof first === 'number' ? [undefined, first] : [first, second ?? fallback];
}

export class Counter<L extends string = never> extends ScalarMetric<L> {
  readonly type = 'counter';

  inc(labels?: Partial<LabelValues<L>> | number, value?: number): void {
    // Spelled out rather than through labelsAndValue: the frontend counts every request here.
    const amount = typeof labels === 'number' ? labels : (value ?? 1);
    if (!(amount >= 0)) throw new Error(`metric ${this.name}: a counter cannot be increased by ${amount}`);
    this.entry(typeof labels === 'number' ? undefined : labels).state.value += amount;
  }
}

export class Gauge<L extends string = never> extends ScalarMetric<L> {
  readonly type = 'gauge';

  set(labels: Partial<LabelValues<L>> | number, value?: number): void {
    const [given, amount] = labelsAndValue(labels, value, 0);
    this.entry(given).state.value = amount;
  }

  inc(labels?: Partial<LabelValues<L>> | number, value?: number): void {
    const [given, amount] = labelsAndValue(labels, value, 1);
    this.entry(given).state.value += amount;
  }

  dec(labels?: Partial<LabelValues<L>> | number, value?: number): void {
    const [given, amount] = labelsAndValue(labels, value, 1);
    this.entry(given).state.value -= amount;
  }
}

interface HistogramState {
  /** Per bucket, observations at most its bound (not cumulative: summed when written). */
  readonly counts: number[];
  sum: number;
  count: number;
}

export class Histogram<L extends string = never> extends Metric<L, HistogramState> {
  readonly type = 'histogram';
  private readonly buckets: readonly number[];

  constructor(name: string, help: string, buckets: readonly number[], labelNames: readonly L[] = []) {
    super(name, help, labelNames);
    if (buckets.length === 0 || buckets.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= (buckets[i - 1] ?? b))))
      throw new Error(`metric ${name}: buckets must be finite and increasing`);
    this.buckets = buckets;
  }

  protected initial(): HistogramState {
    return { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
  }

  observe(labels: Partial<LabelValues<L>> | number, value?: number): void {
    // Spelled out rather than through labelsAndValue: the frontend times every request here.
    const observed = typeof labels === 'number' ? labels : (value ?? Number.NaN);
    if (Number.isNaN(observed)) throw new Error(`metric ${this.name}: observed value is not a number`);
    const state = this.entry(typeof labels === 'number' ? undefined : labels).state;
    const buckets = this.buckets;
    for (let i = 0; i < buckets.length; i++) {
      if (observed <= (buckets[i] as number)) {
        state.counts[i] = (state.counts[i] as number) + 1;
        break;
      }
    }
    state.sum += observed;
    state.count += 1;
  }

  /** Starts a timer; the returned function observes the seconds since, and returns them. */
  startTimer(labels?: Partial<LabelValues<L>>): () => number {
    const start = process.hrtime.bigint();
    return () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      if (labels) this.observe(labels, seconds);
      else this.observe(seconds);
      return seconds;
    };
  }

  protected writeSeries(lines: string[], labels: LabelValues<L>, state: HistogramState): void {
    const text = this.labelText(labels);
    const open = text ? `${text},` : '{';
    let cumulative = 0;
    this.buckets.forEach((bound, i) => {
      cumulative += state.counts[i] ?? 0;
      lines.push(`${this.name}_bucket${open}le="${formatValue(bound)}"} ${cumulative}`);
    });
    lines.push(`${this.name}_bucket${open}le="+Inf"} ${state.count}`);
    const plain = text ? `${text}}` : '';
    lines.push(`${this.name}_sum${plain} ${formatValue(state.sum)}`, `${this.name}_count${plain} ${state.count}`);
  }

  values(): Sample<L>[] {
    return [...this.series.values()].map(({ labels, state }) => ({ labels, value: state.count }));
  }
}

type AnyMetric = Counter<string> | Gauge<string> | Histogram<string>;

/** The metrics one component serves, in the order they were registered. */
export class Registry {
  readonly contentType = CONTENT_TYPE;
  private readonly metricsByName = new Map<string, AnyMetric>();
  private readonly scrapeHooks: (() => void)[] = [];

  /** Runs `hook` at each scrape before any metric is collected (one read shared by several metrics). */
  onScrape(hook: () => void): void {
    this.scrapeHooks.push(hook);
  }

  register<M extends AnyMetric>(metric: M): M {
    if (this.metricsByName.has(metric.name)) throw new Error(`metric ${metric.name} is registered twice`);
    this.metricsByName.set(metric.name, metric);
    return metric;
  }

  /** Every metric in the text format, the scrape hooks and then each metric's collect hook run first. */
  async metrics(): Promise<string> {
    for (const hook of this.scrapeHooks) hook();
    const parts = await Promise.all([...this.metricsByName.values()].map((m) => m.write()));
    return parts.join('');
  }
}
