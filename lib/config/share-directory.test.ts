import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { configProblems } from '../../test/support/config-problems.ts';
import { openSharesConfig } from '../../test/support/frontend-process.ts';
import { projectFiles } from '../../test/support/projected-volume.ts';
import { loadFrontendConfig } from './frontend.ts';
import { shareDirectoryStamp } from './share-directory.ts';

const target = new URL('http://app.team.svc:80');
const share = (token: string) => ({ token, target: target.href });

let root: string;
let configFile: string;
let shares: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-share-dir-'));
  mkdirSync(join(root, 'frontend'));
  configFile = join(root, 'frontend', 'config.yaml');
  shares = join(root, 'auth-shares');
  writeConfig('share_directory: ../auth-shares');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** A config serving the share `main`, with `extra` top-level lines. */
function writeConfig(extra: string): void {
  writeFileSync(configFile, `${openSharesConfig(['main'], target)}${extra}\n`);
}

const project = (files: Record<string, string>, generation = 1) => projectFiles(shares, files, generation);

const problemsOf = (path: string) => configProblems(() => loadFrontendConfig(path));

describe('share_directory', () => {
  it('adds the shares of every *.yaml file, JSON or YAML, in a projected Secret volume, to the file’s own', () => {
    project({
      'shares-00.yaml': JSON.stringify([share('alpha'), share('beta')]),
      'shares-07.yaml': toYaml([share('gamma')]),
      'shares-08.yaml': '[]\n',
      'notes.txt': 'not a share file',
    });
    const config = loadFrontendConfig(configFile);
    expect(config.shares.map((s) => s.token)).toEqual(['main', 'alpha', 'beta', 'gamma']);
    expect(config.shareDirectory).toBe(shares);
  });

  it('takes an absolute path, and a missing directory or an emptied file as no shares', () => {
    writeConfig(`share_directory: ${join(root, 'nowhere')}`);
    expect(loadFrontendConfig(configFile).shares.map((s) => s.token)).toEqual(['main']);
    project({ 'shares-00.yaml': '' });
    writeConfig(`share_directory: ${shares}`);
    expect(loadFrontendConfig(configFile).shares.map((s) => s.token)).toEqual(['main']);
  });

  it('refuses a token in two files, naming both', () => {
    project({
      'shares-01.yaml': JSON.stringify([share('alpha')]),
      'shares-02.yaml': JSON.stringify([share('beta'), share('alpha')]),
    });
    expect(problemsOf(configFile)).toEqual([
      `${join(shares, 'shares-02.yaml')}[1].token: duplicate share token "alpha" (also at ${join(shares, 'shares-01.yaml')}[0])`,
    ]);
  });

  it('reports every bad file at once, each by its path, and the config’s own problems with them', () => {
    writeConfig('share_directory: ../auth-shares\nworkers: 0');
    project({
      'a.yaml': 'token: [unclosed\n',
      'b.yaml': toYaml({ token: 'x' }),
      'c.yaml': JSON.stringify([{ token: 'ok', target: 'ftp://nope', unknown_key: 1 }]),
    });
    const problems = problemsOf(configFile);
    const at = (name: string) => join(shares, name);
    expect(problems).toContain('workers: must be a whole number 1–64 or "auto", got 0');
    expect(problems.find((p) => p.startsWith(`${at('a.yaml')}: YAML syntax:`))).toBeDefined();
    expect(problems).toContain(
      `${at('b.yaml')}: must be a list of shares (the format of the frontend config’s shares:)`,
    );
    expect(problems.filter((p) => p.startsWith(`${at('c.yaml')}[0].`)).length).toBeGreaterThanOrEqual(2);
  });

  it('must be a directory path', () => {
    writeConfig('share_directory: 42');
    expect(problemsOf(configFile)).toEqual(['share_directory: must be a string, got number 42']);
    writeConfig('share_directory: config.yaml');
    expect(problemsOf(configFile)).toEqual([`share_directory: ${configFile} is not a directory`]);
  });

  it('changes its stamp when the kubelet swaps the volume’s data, even to the same sizes', () => {
    project({ 'shares-00.yaml': JSON.stringify([share('alpha')]) });
    const before = shareDirectoryStamp(shares);
    expect(shareDirectoryStamp(shares)).toBe(before);
    project({ 'shares-00.yaml': JSON.stringify([share('gamma')]) }, 2);
    expect(shareDirectoryStamp(shares)).not.toBe(before);
    expect(loadFrontendConfig(configFile).shares.map((s) => s.token)).toEqual(['main', 'gamma']);
    expect(shareDirectoryStamp(join(root, 'nowhere'))).toBe('');
  });
});
