import { fixed, markdownTable } from './report.ts';

/**
 * Issue #12's targets for the frontend, judged from one run's own figures, so that every report
 * says which it met and by how much it missed the others (the status table in docs/benchmarks.md
 * gathers them over runs). A figure the run did not measure gives no verdict rather than a guess.
 */
export interface FrontendFigures {
  /** Saturation req/s of the frontend's OAuth share and of oauth2-proxy as released and tuned. */
  readonly oauthShareRps: number | undefined;
  readonly peerRps: number | undefined;
  readonly tunedPeerRps: number | undefined;
  /** Median same-round ratio of the OAuth share's CPU per request to the bare `http.request` pipe's. */
  readonly barePipeRatio: number | undefined;
  /** The OAuth share's p99 added over direct at half its saturation rate, per core layout. */
  readonly halfSaturationP99: readonly { readonly layout: string; readonly addedMs: number | undefined }[];
  readonly peakRssMiB: number | undefined;
  readonly readyMs: number | undefined;
}

export interface Verdict {
  readonly target: string;
  readonly figure: string;
  /** undefined: not measured in this run. */
  readonly met: boolean | undefined;
  /** How far from the limit, in the target's own unit ("by 4.43 ms"), when missed. */
  readonly miss?: string;
}

export const TARGETS = {
  throughputRatio: 1.0,
  barePipeRatio: 1.1,
  addedP99Ms: 1.0,
  peakRssMiB: 80,
  readyMs: 500,
} as const;

export function judgeTargets(f: FrontendFigures): Verdict[] {
  const ratio = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined || b <= 0 ? undefined : a / b;
  const times = (v: number): string => `${fixed(v, 2)}×`;
  const ms = (v: number): string => `${fixed(v, 2)} ms`;
  return [
    judge('throughput ≥ 1.0× oauth2-proxy (defaults)', ratio(f.oauthShareRps, f.peerRps), {
      atLeast: TARGETS.throughputRatio,
      format: times,
    }),
    judge('throughput ≥ 1.0× oauth2-proxy (64 idle upstream connections)', ratio(f.oauthShareRps, f.tunedPeerRps), {
      atLeast: TARGETS.throughputRatio,
      format: times,
    }),
    judge('CPU per request within 10 % of the bare http.request pipe (paired rounds)', f.barePipeRatio, {
      atMost: TARGETS.barePipeRatio,
      format: times,
    }),
    ...f.halfSaturationP99.map((p) =>
      judge(`p99 added over direct ≤ 1 ms at half saturation (${p.layout})`, p.addedMs, {
        atMost: TARGETS.addedP99Ms,
        format: ms,
      }),
    ),
    judge('peak RSS ≤ 80 MiB', f.peakRssMiB, { atMost: TARGETS.peakRssMiB, format: (v) => `${fixed(v, 1)} MiB` }),
    judge('start-up to ready ≤ 500 ms', f.readyMs, { atMost: TARGETS.readyMs, format: (v) => `${fixed(v, 0)} ms` }),
  ];
}

/** A figure against a lower or an upper limit; a miss is the distance to the limit, in the figure's own format. */
function judge(
  target: string,
  value: number | undefined,
  limit: ({ atLeast: number } | { atMost: number }) & { format: (v: number) => string },
): Verdict {
  if (value === undefined) return { target, figure: '-', met: undefined };
  const short = 'atLeast' in limit ? limit.atLeast - value : value - limit.atMost;
  return {
    target,
    figure: limit.format(value),
    met: short <= 0,
    ...(short > 0 ? { miss: `by ${limit.format(short)}` } : {}),
  };
}

/** The verdicts as a Markdown section. */
export function targetsSection(verdicts: readonly Verdict[]): string[] {
  const word = (v: Verdict): string =>
    v.met === undefined ? 'not measured in this run' : v.met ? 'met' : `**missed** ${v.miss ?? ''}`.trim();
  return [
    '## Issue #12 targets in this run',
    '',
    markdownTable(
      ['target', 'this run', 'verdict'],
      verdicts.map((v) => [v.target, v.figure, word(v)]),
    ),
    '',
    "What limits the targets this machine misses, with profiles: docs/benchmarks.md's status table.",
    '',
  ];
}
