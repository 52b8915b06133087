import { describe, expect, it } from 'vitest';
import { judgeTargets, targetsSection, type FrontendFigures } from './targets.ts';

const figures: FrontendFigures = {
  oauthShareRps: 12_233,
  peerRps: 4_870,
  tunedPeerRps: 7_582,
  barePipeRatio: 0.93,
  halfSaturationP99: [
    { layout: 'unpinned', addedMs: 5.43 },
    { layout: 'proxies pinned', addedMs: 0.31 },
  ],
  peakRssMiB: 82.2,
  readyMs: 151,
};

describe('issue #12 targets judged from one run', () => {
  it('says which targets a run met and by how much it missed the others', () => {
    const verdicts = judgeTargets(figures);
    const by = (start: string) => verdicts.find((v) => v.target.startsWith(start));
    expect(by('throughput ≥ 1.0× oauth2-proxy (defaults)')).toMatchObject({ figure: '2.51×', met: true });
    expect(by('throughput ≥ 1.0× oauth2-proxy (64')).toMatchObject({ figure: '1.61×', met: true });
    expect(by('CPU per request within 10 %')).toMatchObject({ figure: '0.93×', met: true });
    expect(by('p99 added over direct ≤ 1 ms at half saturation (unpinned)')).toMatchObject({
      figure: '5.43 ms',
      met: false,
      miss: 'by 4.43 ms',
    });
    expect(by('p99 added over direct ≤ 1 ms at half saturation (proxies pinned)')).toMatchObject({ met: true });
    expect(by('peak RSS')).toMatchObject({ figure: '82.2 MiB', met: false, miss: 'by 2.2 MiB' });
    expect(by('start-up')).toMatchObject({ figure: '151 ms', met: true });
  });

  it('gives a throughput shortfall and a ratio above the limit in the ratio unit', () => {
    const verdicts = judgeTargets({ ...figures, oauthShareRps: 4_000, barePipeRatio: 1.25 });
    expect(verdicts[0]).toMatchObject({ met: false, miss: 'by 0.18×' });
    expect(verdicts[2]).toMatchObject({ met: false, miss: 'by 0.15×' });
  });

  it('gives no verdict for what the run did not measure', () => {
    const verdicts = judgeTargets({
      ...figures,
      tunedPeerRps: undefined,
      barePipeRatio: undefined,
      halfSaturationP99: [],
      peakRssMiB: undefined,
    });
    expect(verdicts.map((v) => v.met)).toEqual([true, undefined, undefined, undefined, true]);
    const text = targetsSection(verdicts).join('\n');
    expect(text).toMatch(
      /\| throughput ≥ 1\.0× oauth2-proxy \(64 idle upstream connections\) +\| - +\| not measured in this run +\|/,
    );
    expect(text).not.toContain('missed');
  });
});
