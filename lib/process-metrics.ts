import { readdirSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
import { Counter, Gauge, type Registry } from './prometheus.ts';

/**
 * The process metrics every svc component serves, with prom-client's names and help (dashboards
 * built for Node services read them). All are read at the scrape: no timer, no GC observer and no
 * event-loop sampler runs between scrapes (prom-client's woke an idle process 10 times a second
 * and built an object per garbage collection under load). Not served, unlike prom-client:
 * `nodejs_gc_duration_seconds` and the event-loop delay percentiles, which need those samplers;
 * `nodejs_eventloop_lag_seconds` is measured at the scrape, as prom-client does.
 */
export function registerProcessMetrics(registry: Registry, prefix: string): void {
  const readings = new Readings();
  registry.onScrape(() => readings.refresh());
  const add = adders(registry, prefix);
  processMetrics(add, readings);
  eventLoopMetrics(registry, prefix, add, readings);
  heapMetrics(registry, prefix, add, readings);
  const [major, minor, patch] = process.versions.node.split('.');
  const version = registry.register(
    new Gauge(prefix + 'nodejs_version_info', 'Node.js version info.', ['version', 'major', 'minor', 'patch']),
  );
  version.set({ version: process.version, major: major ?? '', minor: minor ?? '', patch: patch ?? '' }, 1);
}

/**
 * What the gauges and counters report, read once per scrape (process.memoryUsage(),
 * /proc/self/status and the heap-space list each serve several metrics).
 */
class Readings {
  private lastCpu = process.cpuUsage();
  /** CPU seconds used since the metrics were registered. */
  readonly cpu = { user: 0, system: 0 };
  memory = process.memoryUsage();
  status: string | undefined;
  spaces = getHeapSpaceStatistics();
  resources = process.getActiveResourcesInfo();

  refresh(): void {
    const now = process.cpuUsage();
    this.cpu.user += (now.user - this.lastCpu.user) / 1e6;
    this.cpu.system += (now.system - this.lastCpu.system) / 1e6;
    this.lastCpu = now;
    this.memory = process.memoryUsage();
    this.status = procFile('status');
    this.spaces = getHeapSpaceStatistics();
    this.resources = process.getActiveResourcesInfo();
  }

  /** A `kB` field of /proc/self/status in bytes. */
  statusBytes(field: string): number | undefined {
    const line = this.status?.match(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm'));
    return line ? Number(line[1]) * 1024 : undefined;
  }
}

/** Registers an unlabelled gauge or counter whose value is read at the scrape. */
interface Adders {
  readonly gauge: (name: string, help: string, read: () => number | undefined) => void;
  readonly counter: (name: string, help: string, read: () => number) => void;
}

function adders(registry: Registry, prefix: string): Adders {
  return {
    gauge: (name, help, read) => {
      const g: Gauge = registry.register(new Gauge(prefix + name, help, [], () => setIfKnown(g, read())));
    },
    counter: (name, help, read) => {
      const c: Counter = registry.register(
        new Counter(prefix + name, help, [], () => {
          c.reset();
          c.inc(read());
        }),
      );
    },
  };
}

/** CPU time, start time, memory sizes and file descriptors (`process_*`). */
function processMetrics({ gauge, counter }: Adders, readings: Readings): void {
  const { cpu } = readings;
  counter('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', () => cpu.user);
  counter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', () => cpu.system);
  counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', () => cpu.user + cpu.system);

  const started = Math.floor(Date.now() / 1000 - process.uptime());
  gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => started);
  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => readings.memory.rss);
  gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', () => readings.statusBytes('VmSize'));
  gauge('process_heap_bytes', 'Process heap size in bytes.', () => readings.statusBytes('VmData'));
  gauge('process_open_fds', 'Number of open file descriptors.', openFileDescriptors);
  gauge('process_max_fds', 'Maximum number of open file descriptors.', () => {
    const limit = procFile('limits')?.match(/^Max open files\s+(\d+)/m);
    return limit ? Number(limit[1]) : undefined;
  });
}

/** The event loop's lag, measured at the scrape, and the active resources keeping it alive. */
function eventLoopMetrics(registry: Registry, prefix: string, { gauge }: Adders, readings: Readings): void {
  const lag: Gauge = registry.register(
    new Gauge(prefix + 'nodejs_eventloop_lag_seconds', 'Lag of event loop in seconds.', [], async () => {
      const start = process.hrtime.bigint();
      await new Promise((resolve) => setImmediate(resolve));
      lag.set(Number(process.hrtime.bigint() - start) / 1e9);
    }),
  );
  const byType: Gauge<'type'> = registry.register(
    new Gauge(
      prefix + 'nodejs_active_resources',
      'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
      ['type'],
      () => {
        byType.reset();
        for (const type of readings.resources) byType.inc({ type });
      },
    ),
  );
  gauge('nodejs_active_resources_total', 'Total number of active resources.', () => readings.resources.length);
}

/** The V8 heap: totals, external memory, and each heap space's size, use and room. */
function heapMetrics(registry: Registry, prefix: string, { gauge }: Adders, readings: Readings): void {
  gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', () => readings.memory.heapTotal);
  gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', () => readings.memory.heapUsed);
  gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', () => readings.memory.external);

  const perSpace = (name: string, help: string, read: (s: Readings['spaces'][number]) => number): void => {
    const g: Gauge<'space'> = registry.register(
      new Gauge(prefix + name, help, ['space'], () => {
        for (const space of readings.spaces) g.set({ space: space.space_name.replace(/_space$/, '') }, read(space));
      }),
    );
  };
  perSpace(
    'nodejs_heap_space_size_total_bytes',
    'Process heap space size total from Node.js in bytes.',
    (s) => s.space_size,
  );
  perSpace(
    'nodejs_heap_space_size_used_bytes',
    'Process heap space size used from Node.js in bytes.',
    (s) => s.space_used_size,
  );
  perSpace(
    'nodejs_heap_space_size_available_bytes',
    'Process heap space size available from Node.js in bytes.',
    (s) => s.space_available_size,
  );
}

function setIfKnown(gauge: Gauge, value: number | undefined): void {
  if (value === undefined) gauge.reset();
  else gauge.set(value);
}

/** A file of /proc/self, or undefined where there is none (not Linux). */
function procFile(name: string): string | undefined {
  try {
    return readFileSync(`/proc/self/${name}`, 'utf8');
  } catch {
    return undefined;
  }
}

function openFileDescriptors(): number | undefined {
  try {
    // The directory listing itself holds one descriptor while it is read.
    return readdirSync('/proc/self/fd').length - 1;
  } catch {
    return undefined;
  }
}
