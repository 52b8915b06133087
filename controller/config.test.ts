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

describe('the public_frontend section', () => {
  const credential = file('credential', `${'c'.repeat(40)}\n`);

  it('reads domain, endpoint_url, the trimmed credential (relative to the config file) and providers', () => {
    const path = file(
      'pf.yaml',
      [
        'public_frontend:',
        '  domain: Share.Example.com',
        '  endpoint_url: https://share.example.com',
        '  credential_file: credential',
        '  providers: [google, corp]',
        '  token_quarantine: 30d',
      ].join('\n'),
    );
    const config = loadControllerConfig(path, { store: 'kubernetes', namespace: 'svc' });
    expect(config.publicFrontend).toMatchObject({
      domain: 'share.example.com',
      credentialFile: credential,
      credential: 'c'.repeat(40),
      providers: ['google', 'corp'],
      tokenQuarantineMs: 30 * 86_400_000,
    });
    expect(config.publicFrontend?.endpointUrl.href).toBe('https://share.example.com/');
    expect(loadControllerConfig(undefined).publicFrontend).toBeUndefined();
  });

  it('reports every problem with its field path, never the credential', () => {
    const short = file('short', 'too-short-credential\n');
    const path = file(
      'pf-bad.yaml',
      [
        'public_frontend:',
        '  domain: not a domain',
        '  endpoint_url: https://share.example.com/path',
        `  credential_file: ${short}`,
        '  providers: [""]',
        '  replicas: 2',
        '  token_quarantine: forever',
      ].join('\n'),
    );
    const problems = problemsOf(() => loadControllerConfig(path));
    expect(problems).toEqual([
      'public_frontend.replicas: unknown field (known: domain, endpoint_url, credential_file, providers, token_quarantine, reserved_hosts)',
      'public_frontend.domain: must be a DNS domain such as share.example.com, got "not a domain"',
      'public_frontend.endpoint_url: must be a base URL without path, query, fragment or credentials',
      `public_frontend.credential_file: ${short} must hold at least 32 characters (it holds 20)`,
      'public_frontend.providers: must be a list of non-empty strings',
      'public_frontend.token_quarantine: must be a duration such as 5m, 6h or 24h, got "forever"',
    ]);
    expect(problems.join('\n')).not.toContain('too-short-credential');
    expect(problemsOf(() => loadControllerConfig(file('pf-none.yaml', 'public_frontend: {}\n')))).toEqual([
      'public_frontend.domain: required',
      'public_frontend.endpoint_url: required',
      'public_frontend.credential_file: required',
    ]);
    const missing = join(dir, 'absent');
    expect(
      problemsOf(() =>
        loadControllerConfig(
          file(
            'pf-missing.yaml',
            `public_frontend:\n  domain: a.b\n  endpoint_url: http://a.b\n  credential_file: ${missing}\n`,
          ),
        ),
      ),
    ).toEqual([`public_frontend.credential_file: cannot read ${missing} (ENOENT)`]);
  });
});
