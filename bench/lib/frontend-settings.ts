import { parseArgs } from 'node:util';
import type { BackendKind } from './backend.ts';
import { parseVariant, type RuntimeVariant } from './frontend-process.ts';
import { intArg, loadArgs, loadOptions, type LoadArgs } from './load-args.ts';
import { memoryLimitArg } from './memory-limit.ts';

/** The options of `npm run bench:frontend` (bench/frontend.ts's header lists them), checked. */
export interface FrontendBenchSettings extends LoadArgs {
  /** Another checkout whose frontend runs beside this one's, same config and load (before/after figures). */
  readonly baseline: string | undefined;
  /** `--workers n` (n ≥ 2): also this checkout's frontend with `workers: n`, for per-core and whole-machine figures. */
  readonly workers: number | undefined;
  /**
   * `--memory-limit pod|none|<MiB>`: the memory cgroup the Node proxies run in (default `pod`: the
   * sidecar container's limit, bench/lib/memory-limit.ts), or none.
   */
  readonly memoryLimitMiB: number | undefined;
  /** `--variant`: runtime settings to measure beside the deployed ones, each one more frontend process. */
  readonly variants: readonly RuntimeVariant[];
  /** `--latency-at 0.25,0.5`: the fixed rates as fractions of the frontend OAuth share's saturation (without `--rate`). */
  readonly latencyAt: readonly number[];
  /**
   * `--saturation-samples n` (default 3): saturation runs of the OAuth share whose highest rate the
   * fixed rates are fractions of. One 5 s sample taken in a slow window of a shared machine came out
   * at two thirds of the others (docs/benchmarks-history.md, "What a request costs when it arrives alone"), which made "half of saturation" an
   * easier rate than the frontend's own half; the highest sample is the rate the frontend can sustain.
   */
  readonly saturationSamples: number;
  /** Whether to run the fixed-rate latency pass after the saturation runs (`--latency no` halves the run). */
  readonly latency: boolean;
  /** `--latency-pin no|yes|both` (default both): the core layouts of the fixed-rate pass, unpinned first. */
  readonly latencyPin: readonly boolean[];
  /**
   * `--pair-rounds n` (default 6, 0 to skip): the bare pipe and the frontend's open and OAuth shares
   * once more in n short alternating rounds (`--pair-seconds`, default 3), for the frontend's CPU per
   * request over the bare pipe's as a median of same-round ratios (bench/lib/paired.ts).
   */
  readonly pairRounds: number;
  readonly pairSeconds: number;
  /** `--pair-pin yes|no` (default yes): each proxy on a core of its own during the paired rounds. */
  readonly pairPin: boolean;
  /**
   * `--backend nginx|node` (default nginx): what answers behind every contender. nginx's one worker
   * costs a quarter of the node:http server's CPU per request at a fixed rate, which the proxies
   * and the generator then have (docs/benchmarks-history.md, "The generator and the backend out of the way").
   */
  readonly backend: BackendKind;
}

/** `--latency-pin` → the layouts of the fixed-rate pass (pinned or not), in the order they run. */
const LATENCY_PIN = new Map<string, readonly boolean[]>([
  ['no', [false]],
  ['yes', [true]],
  ['both', [false, true]],
]);

/** `--latency-at 0.25,0.5`: each a fraction in (0, 1], or an error naming the one that is not. */
function latencyFractions(text: string): number[] {
  return text.split(',').map((f) => {
    const n = Number(f);
    if (!(n > 0 && n <= 1)) throw new Error(`--latency-at: "${f}" is not a fraction in (0, 1]`);
    return n;
  });
}

/** The command line of `npm run bench:frontend`, checked: a bad value fails with an error naming its option. */
export function frontendBenchSettings(args: readonly string[] = process.argv.slice(2)): FrontendBenchSettings {
  const { values } = parseArgs({
    args: [...args],
    options: {
      ...loadOptions({ duration: '10', warmup: '2' }),
      baseline: { type: 'string' },
      workers: { type: 'string' },
      latency: { type: 'string', default: 'yes' },
      variant: { type: 'string', multiple: true, default: [] },
      'memory-limit': { type: 'string', default: 'pod' },
      'latency-at': { type: 'string', default: '0.5' },
      'saturation-samples': { type: 'string', default: '3' },
      'latency-pin': { type: 'string', default: 'both' },
      'pair-rounds': { type: 'string', default: '6' },
      'pair-seconds': { type: 'string', default: '3' },
      'pair-pin': { type: 'string', default: 'yes' },
      backend: { type: 'string', default: 'nginx' },
    },
  });
  if (values.backend !== 'nginx' && values.backend !== 'node') throw new Error('--backend must be nginx or node');
  if (values.latency !== 'yes' && values.latency !== 'no') throw new Error('--latency must be yes or no');
  if (values['pair-pin'] !== 'yes' && values['pair-pin'] !== 'no') throw new Error('--pair-pin must be yes or no');
  const latencyPin = LATENCY_PIN.get(values['latency-pin']);
  if (!latencyPin) throw new Error('--latency-pin must be no, yes or both');
  return {
    ...loadArgs(values),
    baseline: values.baseline,
    workers: values.workers === undefined ? undefined : intArg('workers', values.workers, 2, 64),
    variants: values.variant.map((text) => parseVariant('variant', text)),
    memoryLimitMiB: memoryLimitArg(values['memory-limit'], (t) => intArg('memory-limit', t, 64, 65536)),
    latency: values.latency === 'yes',
    latencyPin,
    saturationSamples: intArg('saturation-samples', values['saturation-samples'], 1, 20),
    pairRounds: intArg('pair-rounds', values['pair-rounds'], 0, 100),
    pairSeconds: intArg('pair-seconds', values['pair-seconds'], 1, 600),
    pairPin: values['pair-pin'] === 'yes',
    backend: values.backend,
    latencyAt: latencyFractions(values['latency-at']),
  };
}
