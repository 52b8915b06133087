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
  const gauge = (name: string, help: string, collect: (g: Gauge) => void): void => {
    const g: Gauge = registry.register(new Gauge(prefix + name, help, [], () => collect(g)));
  };

  let lastCpu = process.cpuUsage();
  const cpu = { user: 0, system: 0 };
  const readCpu = (): void => {
    const now = process.cpuUsage();
    cpu.user += (now.user - lastCpu.user) / 1e6;
    cpu.system += (now.system - lastCpu.system) / 1e6;
    lastCpu = now;
  };
  // The three are written one after the other at a scrape: the first reads the CPU time once, so
  // the total is the sum of the other two.
  const cpuCounter = (name: string, help: string, read: () => number, first = false): void => {
    const c: Counter = registry.register(
      new Counter(prefix + name, help, [], () => {
        if (first) readCpu();
        c.reset();
        c.inc(read());
      }),
    );
  };
  cpuCounter('process_cpu_user_seconds_total', 'Total user CPU time spent in seconds.', () => cpu.user, true);
  cpuCounter('process_cpu_system_seconds_total', 'Total system CPU time spent in seconds.', () => cpu.system);
  cpuCounter(
    'process_cpu_seconds_total',
    'Total user and system CPU time spent in seconds.',
    () => cpu.user + cpu.system,
  );

  const started = Math.floor(Date.now() / 1000 - process.uptime());
  gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', (g) => g.set(started));

  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', (g) => g.set(process.memoryUsage.rss()));
  const status = (field: string): number | undefined => {
    const line = procFile('status')?.match(new RegExp(`^${field}:\\s*(\\d+) kB`, 'm'));
    return line ? Number(line[1]) * 1024 : undefined;
  };
  gauge('process_virtual_memory_bytes', 'Virtual memory size in bytes.', (g) => setIfKnown(g, status('VmSize')));
  gauge('process_heap_bytes', 'Process heap size in bytes.', (g) => setIfKnown(g, status('VmData')));
  gauge('process_open_fds', 'Number of open file descriptors.', (g) => setIfKnown(g, openFileDescriptors()));
  gauge('process_max_fds', 'Maximum number of open file descriptors.', (g) => {
    const limit = procFile('limits')?.match(/^Max open files\s+(\d+)/m);
    setIfKnown(g, limit ? Number(limit[1]) : undefined);
  });

  const lag: Gauge = registry.register(
    new Gauge(prefix + 'nodejs_eventloop_lag_seconds', 'Lag of event loop in seconds.', [], async () => {
      const start = process.hrtime.bigint();
      await new Promise((resolve) => setImmediate(resolve));
      lag.set(Number(process.hrtime.bigint() - start) / 1e9);
    }),
  );

  const resources: Gauge<'type'> = registry.register(
    new Gauge(
      prefix + 'nodejs_active_resources',
      'Number of active resources that are currently keeping the event loop alive, grouped by async resource type.',
      ['type'],
      () => {
        resources.reset();
        for (const type of process.getActiveResourcesInfo()) resources.inc({ type });
      },
    ),
  );
  gauge('nodejs_active_resources_total', 'Total number of active resources.', (g) =>
    g.set(process.getActiveResourcesInfo().length),
  );

  gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', (g) =>
    g.set(process.memoryUsage().heapTotal),
  );
  gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', (g) =>
    g.set(process.memoryUsage().heapUsed),
  );
  gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', (g) =>
    g.set(process.memoryUsage().external),
  );

  const spaces = (
    name: string,
    help: string,
    read: (s: ReturnType<typeof getHeapSpaceStatistics>[number]) => number,
  ) => {
    const g: Gauge<'space'> = registry.register(
      new Gauge(prefix + name, help, ['space'], () => {
        for (const space of getHeapSpaceStatistics())
          g.set({ space: space.space_name.replace(/_space$/, '') }, read(space));
      }),
    );
  };
  spaces(
    'nodejs_heap_space_size_total_bytes',
    'Process heap space size total from Node.js in bytes.',
    (s) => s.space_size,
  );
  spaces(
    'nodejs_heap_space_size_used_bytes',
    'Process heap space size used from Node.js in bytes.',
    (s) => s.space_used_size,
  );
  spaces(
    'nodejs_heap_space_size_available_bytes',
    'Process heap space size available from Node.js in bytes.',
    (s) => s.space_available_size,
  );

  const [major, minor, patch] = process.versions.node.split('.');
  const version = registry.register(
    new Gauge(prefix + 'nodejs_version_info', 'Node.js version info.', ['version', 'major', 'minor', 'patch']),
  );
  version.set({ version: process.version, major: major ?? '', minor: minor ?? '', patch: patch ?? '' }, 1);
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
