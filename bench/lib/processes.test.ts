import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { coreWait } from './processes.ts';

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
