import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

/**
 * prom-client's own pieces, loaded one by one: its index also loads the Pushgateway (node:https,
 * node:zlib), Summary (tdigest, bintrees), the cluster aggregator and, through its CPU collector,
 * @opentelemetry/api (51 files) for exemplars — none of them used here (memory: the frontend's RSS
 * fell by 2.3 MiB idle, 3.3 MiB after load, docs/benchmarks.md "Frontend memory (issue #12)").
 * The CPU counters are declared below instead, with prom-client's names and help.
 */
const require = createRequire(import.meta.url);
const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;

type Collector = (registry: Prom.Registry, config: { prefix: string; eventLoopMonitoringPrecision: number }) => void;

/** prom-client's default collectors (lib/defaultMetrics.js) after its CPU one, in its order. */
const DEFAULT_COLLECTORS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
];

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
    if (options.defaultMetrics !== false) this.defaultMetrics();
  }

  protected counter<L extends string = never>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
  ): Prom.Counter<L> {
    return new Counter({ name: this.prefix + name, help, labelNames, registers: [this.registry] });
  }

  protected gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = []): Prom.Gauge<L> {
    return new Gauge({ name: this.prefix + name, help, labelNames, registers: [this.registry] });
  }

  protected histogram<L extends string = never>(
    name: string,
    help: string,
    buckets: number[],
    labelNames: readonly L[] = [],
  ): Prom.Histogram<L> {
    return new Histogram({ name: this.prefix + name, help, buckets, labelNames, registers: [this.registry] });
  }

  /** What prom-client's collectDefaultMetrics registers, the same names and help. */
  private defaultMetrics(): void {
    // prom-client's process_cpu_* counters: user, system and both, set at each scrape.
    let last = process.cpuUsage();
    const collect = (): void => {
      const now = process.cpuUsage();
      user.inc((now.user - last.user) / 1e6);
      system.inc((now.system - last.system) / 1e6);
      both.inc((now.user - last.user + now.system - last.system) / 1e6);
      last = now;
    };
    const user = new Counter({
      name: `${this.prefix}process_cpu_user_seconds_total`,
      help: 'Total user CPU time spent in seconds.',
      registers: [this.registry],
      collect,
    });
    const system = this.counter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.');
    const both = this.counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.');
    // The event-loop-lag collector samples with a timer: at prom-client's default 10 ms it woke an
    // idle process 100 times a second, 0.8 % of a core (all of an idle operator's CPU; every share
    // pod's sidecar too). At 100 ms it costs about 0.1 % and still catches any stall that matters.
    const config = { prefix: this.prefix, eventLoopMonitoringPrecision: 100 };
    for (const name of DEFAULT_COLLECTORS)
      (require(`prom-client/lib/metrics/${name}`) as Collector)(this.registry, config);
  }
}
