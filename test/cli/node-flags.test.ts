import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TUNNEL_NODE_FLAGS, extraNodeFlags } from '../../bin/node-flags.js';
import { NODE, startSvc, svcCli, tempDir } from '../controller/harness.ts';
import { ROOT } from '../serve/harness.ts';

/**
 * The processes on a tunnel's path (`svc serve`, `svc controller`, `svc public-frontend`) run with
 * the V8 flags of bin/node-flags.js, put on Node's command line by re-executing Node in the same
 * process; `svc frontend` (the share pod sidecar) and the other commands run as started. Observed
 * from outside: a preload prints each Node start's pid and flags, and a running process's command
 * line is read from /proc.
 */
const dir = tempDir('svc-node-flags-');
const PROBE = join(dir, 'probe.mjs');
writeFileSync(PROBE, "console.error('NODE_FLAGS_PROBE', process.pid, JSON.stringify(process.execArgv));\n");

/** Each Node start of `svc <args>`: its pid and execArgv, in order. */
async function nodeStarts(args: readonly string[]): Promise<{ pid: number; execArgv: string[] }[]> {
  const result = await svcCli(args, { env: { NODE_OPTIONS: `--import=${PROBE}` } });
  expect(result.code, result.stderr).toBe(0);
  return [...result.stderr.matchAll(/^NODE_FLAGS_PROBE (\d+) (.*)$/gm)].map((m) => ({
    pid: Number(m[1]),
    execArgv: JSON.parse(m[2] ?? '[]') as string[],
  }));
}

describe('Node flags per command', () => {
  it.each([['serve'], ['controller'], ['public-frontend']])(
    'svc %s runs re-executed in the same process with the tunnel flags',
    async (command) => {
      const starts = await nodeStarts([command, '--help']);
      expect(starts).toHaveLength(2);
      expect(starts[1]?.pid).toBe(starts[0]?.pid);
      expect(starts[0]?.execArgv).not.toContain(TUNNEL_NODE_FLAGS[0]);
      expect(starts[1]?.execArgv).toEqual(expect.arrayContaining([...TUNNEL_NODE_FLAGS]));
    },
  );

  it.each(['frontend', 'agent backend', 'status', 'share'])('svc %s runs as started, without them', async (command) => {
    const starts = await nodeStarts([...command.split(' '), '--help']);
    expect(starts).toHaveLength(1);
    expect(starts[0]?.execArgv).toEqual([]);
  });

  it('a running svc serve has them on its command line', async () => {
    const proc = await startSvc(
      ['serve', '--data-dir', join(dir, 'serve'), '--listen', '127.0.0.1:0'],
      /svc serve is ready/,
    );
    try {
      const cmdline = readFileSync(`/proc/${proc.child.pid}/cmdline`, 'utf8').split('\0');
      expect(cmdline).toEqual(expect.arrayContaining([...TUNNEL_NODE_FLAGS]));
      expect(cmdline.indexOf(TUNNEL_NODE_FLAGS[0] ?? '')).toBeLessThan(cmdline.indexOf(join(ROOT, 'bin/svc.js')));
    } finally {
      expect(await proc.stop()).toBe(0);
    }
  });

  it("keeps a value given on Node's command line (no re-execution)", () => {
    const result = spawnSync(
      NODE,
      ['--heap-growing-percent=100', '--import', PROBE, join(ROOT, 'bin/svc.js'), 'serve', '--help'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect(result.status, result.stderr).toBe(0);
    const probes = [...result.stderr.matchAll(/^NODE_FLAGS_PROBE \d+ (.*)$/gm)].map((m) => m[1]);
    expect(probes).toEqual([JSON.stringify(['--heap-growing-percent=100', '--import', PROBE])]);
  });

  it('finds every module of a re-executed svc serve in the compile cache the image build fills', () => {
    // The cache is keyed by Node's flags: without its second pass, the flagged processes would miss
    // it and strip types at each start in a pod (read-only root filesystem).
    const env = { ...process.env, NODE_COMPILE_CACHE: join(dir, 'compile-cache') };
    const warm = spawnSync(NODE, [join(ROOT, 'bin/warm-compile-cache.js')], { cwd: ROOT, env, encoding: 'utf8' });
    expect(warm.status, warm.stderr).toBe(0);
    const serve = spawnSync(NODE, [join(ROOT, 'bin/svc.js'), 'serve', '--help'], {
      cwd: ROOT,
      env: { ...env, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' },
      encoding: 'utf8',
    });
    expect(serve.status, serve.stderr).toBe(0);
    // bin/svc.js itself, the entry point, is not among what the warm-up imports (it would run svc).
    const log = serve.stderr
      .split('\n')
      .filter((line) => line.startsWith('[compile cache]') && !line.includes('/bin/svc.js'));
    expect(log.filter((line) => /was accepted/.test(line)).length).toBeGreaterThan(10);
    expect(log.filter((line) => /no such file|not initialized|rejected/.test(line))).toEqual([]);
  }, 120_000);

  it('adds a flag only where Node has no value of it', () => {
    expect(extraNodeFlags(['serve', '--help'], [])).toEqual([...TUNNEL_NODE_FLAGS]);
    expect(extraNodeFlags(['controller'], ['--heap-growing-percent=50'])).toEqual([]);
    expect(extraNodeFlags(['frontend', '--config', 'f.yaml'], [])).toEqual([]);
    expect(extraNodeFlags([], [])).toEqual([]);
  });
});
