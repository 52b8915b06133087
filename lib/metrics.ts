import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * A component's Prometheus metrics in a registry of its own (two operators or frontends in one
 * test process must not share counters), every name under one prefix. Process CPU and memory come
 * from prom-client's default collectors under the same prefix. Subclasses declare their metrics
 * as fields: `readonly hits = this.counter('hits_total', 'What a hit is', ['outcome'])`.
 */
export class MetricSet {
  readonly registry = new Registry();
  private readonly prefix: string;

  constructor(prefix: string, options: { defaultMetrics?: boolean } = {}) {
    this.prefix = prefix;
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix });
  }

  protected counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name: this.prefix + name, help, labelNames, registers: [this.registry] });
  }

  protected gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name: this.prefix + name, help, labelNames, registers: [this.registry] });
  }

  protected histogram<L extends string = never>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ): Histogram<L> {
    return new Histogram({ name: this.prefix + name, help, buckets, labelNames, registers: [this.registry] });
  }
}
