import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSvc, tempDir, writeYaml } from '../controller/harness.ts';

/**
 * A SIGTERM that arrives the moment a long-running `svc` process says it is ready (a kubelet
 * stopping a pod that just started, a supervisor restarting it) must still get the clean shutdown
 * and exit 0, not Node's default action for the signal (death by signal, exit code null). Each
 * process registers its signal handlers before it starts up (lib/signals.ts).
 */
const dir = tempDir('svc-stop-signal-');
const controllerConfig = writeYaml(join(dir, 'controller.yaml'), ['controller: { listen: 127.0.0.1:0 }']);

const processes: readonly { name: string; args: readonly string[]; ready: RegExp }[] = [
  {
    name: 'svc agent backend',
    args: ['agent', 'backend', '--backend-mode', 'proxy', '--target', 'http://127.0.0.1:9', '--listen', '127.0.0.1:0'],
    ready: /share backend listening/,
  },
  {
    name: 'svc controller',
    args: ['controller', '--config', controllerConfig, '--data-dir', join(dir, 'controller')],
    ready: /svc controller is ready/,
  },
  {
    name: 'svc serve',
    args: ['serve', '--data-dir', join(dir, 'serve'), '--listen', '127.0.0.1:0'],
    ready: /svc serve is ready/,
  },
];

describe('a SIGTERM right after the ready line', () => {
  it.each(processes)(
    '$name exits 0 through its shutdown',
    async ({ args, ready }) => {
      // Three times: the window between the ready line and a late handler was a few milliseconds.
      for (let i = 0; i < 3; i += 1) {
        const proc = await startSvc(args, ready);
        const code = await proc.stop();
        expect({ code, signal: proc.child.signalCode }, proc.output()).toEqual({ code: 0, signal: null });
      }
    },
    60_000,
  );
});
