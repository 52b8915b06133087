import { commandExists } from './processes.ts';
import type { LoadSettings } from './measure.ts';

/**
 * The command-line options every load benchmark takes (`--duration`, `--warmup`, `--connections`,
 * `--load`, `--rate`), for `parseArgs`, and their validation: one spelling and one set of limits
 * across bench/frontend.ts and bench/tunnel.ts.
 */
export interface LoadArgs extends LoadSettings {
  /** Arrival rate (req/s) of the fixed-rate latency runs; undefined: the benchmark chooses (`--rate auto`). */
  readonly rate: number | undefined;
  /** Interleaved rounds of the fixed-rate runs (`--latency-rounds`). */
  readonly latencyRounds: number;
}

interface StringOption {
  readonly type: 'string';
  readonly default: string;
}

export function loadOptions(defaults: {
  duration: string;
  warmup: string;
}): Record<'duration' | 'warmup' | 'connections' | 'load' | 'rate' | 'latency-rounds', StringOption> {
  return {
    duration: { type: 'string', default: defaults.duration },
    warmup: { type: 'string', default: defaults.warmup },
    connections: { type: 'string', default: '32' },
    load: { type: 'string', default: 'auto' },
    rate: { type: 'string', default: 'auto' },
    'latency-rounds': { type: 'string', default: '3' },
  };
}

/** `--load auto` picks wrk when installed (far lighter on a small machine's CPU), else autocannon. */
export function loadArgs(
  values: Record<'duration' | 'warmup' | 'connections' | 'load' | 'rate' | 'latency-rounds', string>,
): LoadArgs {
  const load = values.load === 'auto' ? (commandExists('wrk') ? 'wrk' : 'autocannon') : values.load;
  if (load !== 'autocannon' && load !== 'wrk') throw new Error('--load must be auto, autocannon or wrk');
  return {
    durationSeconds: intArg('duration', values.duration, 1, 60),
    warmupSeconds: intArg('warmup', values.warmup, 0, 30),
    connections: intArg('connections', values.connections, 1, 1024),
    tool: load,
    rate: values.rate === 'auto' ? undefined : intArg('rate', values.rate, 1, 1_000_000),
    latencyRounds: intArg('latency-rounds', values['latency-rounds'], 1, 20),
  };
}

/** An integer option within [min, max], or an error naming the option. */
export function intArg(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name} must be an integer ${min}–${max}`);
  return n;
}
