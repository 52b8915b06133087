import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, problemText } from '../lib/errors.ts';
import { DEFAULT_CONTROLLER_LISTEN, loadControllerConfig } from './config.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-controller-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function problemsOf(run: () => unknown): readonly string[] {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map(problemText);
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadControllerConfig with flags', () => {
  it('defaults without a file; --listen takes the place of controller.listen', () => {
    expect(loadControllerConfig(undefined)).toMatchObject({
      controller: { listen: DEFAULT_CONTROLLER_LISTEN },
      store: { kind: 'file' },
    });
    const path = file('listen.yaml', 'controller:\n  listen: 127.0.0.1:1\n');
    expect(loadControllerConfig(path).controller.listen).toEqual({ host: '127.0.0.1', port: 1 });
    expect(loadControllerConfig(path, { listen: '0.0.0.0:0' }).controller.listen).toEqual({ host: '0.0.0.0', port: 0 });
    expect(loadControllerConfig(undefined, { store: 'kubernetes', namespace: 'svc' }).store).toEqual({
      kind: 'kubernetes',
      namespace: 'svc',
    });
  });

  it('reports the file and the flags in one pass, each problem under its field path or flag', () => {
    const path = file('bad.yaml', 'controller:\n  listen: nowhere\n  colour: blue\n');
    expect(problemsOf(() => loadControllerConfig(path, { store: 's3' }))).toEqual([
      'controller.colour: unknown field (known: listen, max_body_bytes, agent_timeout)',
      'controller.listen: must be ip:port (for example 0.0.0.0:8080), got "nowhere"',
      '--store: must be file or kubernetes, got "s3"',
    ]);
    expect(problemsOf(() => loadControllerConfig(path, { listen: 'here', namespace: 'svc' }))).toEqual([
      'controller.colour: unknown field (known: listen, max_body_bytes, agent_timeout)',
      '--listen: must be ip:port (for example 0.0.0.0:8080), got "here"',
      '--namespace: only applies with --store kubernetes',
    ]);
  });
});
