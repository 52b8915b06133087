import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { coreWait, cpuOfEveryProcess, helperThreadsCpuSeconds, machineCpu, softirqThreadPids } from './processes.ts';

describe('coreWait', () => {
  const children: ChildProcess[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill('SIGKILL');
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    }
  });

  it('has no figure for a process that does not exist', () => {
    expect(coreWait(2 ** 22 + 1)).toBeUndefined();
  });

  it("counts a busy worker thread as the process's helper-thread CPU, not its main thread's", async () => {
    const code =
      "new (require('node:worker_threads').Worker)('for (;;) {}', { eval: true }); setInterval(() => {}, 1000);";
    const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
    children.push(child);
    await new Promise((r) => setTimeout(r, 1000));
    const before = helperThreadsCpuSeconds(child.pid as number) ?? 0;
    // The spinning thread gets 0.2 s of CPU within a second on an idle machine; on a loaded one
    // (the whole suite running) it is given up to 10 s to get there.
    let grown = 0;
    for (let waited = 0; waited < 10_000 && grown <= 0.2; waited += 100) {
      await new Promise((r) => setTimeout(r, 100));
      grown = (helperThreadsCpuSeconds(child.pid as number) ?? 0) - before;
    }
    expect(grown).toBeGreaterThan(0.2);
    expect(helperThreadsCpuSeconds(2 ** 22 + 1)).toBeUndefined();
  });

  it('counts the time two busy processes on one core spend waiting for it', async () => {
    const spin = (): ChildProcess =>
      spawn('taskset', ['-c', '0', process.execPath, '-e', 'for (;;) {}'], { stdio: 'ignore' });
    children.push(spin(), spin());
    const pid = children[0]?.pid as number;
    await new Promise((r) => setTimeout(r, 200));
    const before = coreWait(pid);
    await new Promise((r) => setTimeout(r, 1000));
    const after = coreWait(pid);
    expect(before && after).toBeTruthy();
    // Sharing one core, each spinner is runnable all the time and on it about half of it.
    expect((after?.waitSeconds ?? 0) - (before?.waitSeconds ?? 0)).toBeGreaterThan(0.2);
    expect((after?.slices ?? 0) - (before?.slices ?? 0)).toBeGreaterThan(0);
  });
});

describe('softirqThreadPids', () => {
  it("finds the kernel's ksoftirqd threads", () => {
    const pids = softirqThreadPids();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) expect(readFileSync(`/proc/${pid}/comm`, 'utf8')).toMatch(/^ksoftirqd\/\d+/);
    expect(coreWait(pids[0] as number)).toBeDefined();
  });
});

describe('cpuOfEveryProcess', () => {
  it('lists this process by its command and script, and kernel threads by name', () => {
    const every = cpuOfEveryProcess();
    const self = every.get(process.pid);
    expect(self?.name.split(' ')[0]).toBe(process.execPath.split('/').at(-1));
    expect(self?.seconds).toBeGreaterThan(0);
    expect([...every.values()].some((p) => /^\[ksoftirqd\/\d+\]$/.test(p.name))).toBe(true);
  });
});

describe('machineCpu', () => {
  it("counts the machine's busy time as it passes", async () => {
    const before = machineCpu();
    const until = Date.now() + 300;
    while (Date.now() < until); // keep one core busy
    await new Promise((r) => setTimeout(r, 50)); // let the tick be accounted
    const after = machineCpu();
    expect(before && after).toBeTruthy();
    const busy = (m: NonNullable<typeof before>): number => m.user + m.system;
    expect(busy(after as NonNullable<typeof after>) - busy(before as NonNullable<typeof before>)).toBeGreaterThan(0.1);
  });
});
