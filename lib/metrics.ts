import { registerProcessMetrics } from './process-metrics.ts';
import { Counter, Gauge, Histogram, Registry } from './prometheus.ts';

/**
 * A component's Prometheus metrics in a registry of its own (two operators or frontends in one
 * test process must not share counters), every name under one prefix, the process metrics
 * (lib/process-metrics.ts) under the same prefix. Subclasses declare their metrics as fields:
 * `readonly hits = this.counter('hits_total', 'What a hit is', ['outcome'])`.
 */
export class MetricSet {
  readonly registry = new Registry();
  private readonly prefix: string;

  constructor(prefix: string, options: { defaultMetrics?: boolean } = {}) {
    this.prefix = prefix;
    if (options.defaultMetrics !== false) registerProcessMetrics(this.registry, prefix);
  }

  protected counter<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return this.registry.register(new Counter(this.prefix + name, help, labelNames));
  }

  protected gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return this.registry.register(new Gauge(this.prefix + name, help, labelNames));
  }

  protected histogram<L extends string = never>(
    name: string,
    help: string,
    buckets: readonly number[],
    labelNames: readonly L[] = [],
  ): Histogram<L> {
    return this.registry.register(new Histogram(this.prefix + name, help, buckets, labelNames));
  }
}
