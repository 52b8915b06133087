import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigReader, loadYamlFile } from './config-reader.ts';
import { ConfigError } from './errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'svc-config-reader-'));
let count = 0;
function file(text: string): string {
  const path = join(dir, `c${count++}.yaml`);
  writeFileSync(path, text);
  return path;
}

describe('loadYamlFile', () => {
  it('reads a JSON document (as the operator writes sidecar configs) exactly as YAML reads it', () => {
    const text = JSON.stringify(
      { oauth: { providers: [{ name: 'p', scopes: ['openid'] }] }, shares: [{ token: 'a', note: 'x": {"token": 1' }] },
      null,
      2,
    );
    expect(loadYamlFile(file(text))).toEqual(parse(text));
  });

  it('refuses a key repeated in a JSON object, as YAML does, instead of keeping the last value', () => {
    const text = '{"oauth": {"cookie_name": "a", "x": ["cookie_name"], "cookie_name": "b"}}';
    const error = (() => {
      try {
        loadYamlFile(file(text));
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/YAML syntax: .*unique/is);
  });

  it('keeps the same key in sibling objects and in string values', () => {
    const text = '{"a": {"k": 1}, "b": {"k": "\\"k\\": 2"}, "k": [{"k": 3}, {"k": 4}]}';
    expect(loadYamlFile(file(text))).toEqual({ a: { k: 1 }, b: { k: '"k": 2' }, k: [{ k: 3 }, { k: 4 }] });
  });

  it('reports malformed JSON as a YAML syntax error with its position', () => {
    expect(() => loadYamlFile(file('{"oauth": [}'))).toThrow(/YAML syntax: .*line 1/is);
  });
});

describe('configuration errors never quote a secret', () => {
  it('names the position of a YAML syntax error without quoting the lines around it', () => {
    const text = 'providers:\n  - name: p\n  client_secret: s3cr3t-xyz-7: bad\n';
    expect(() => loadYamlFile(file(text))).toThrow(/YAML syntax: .*at line 3, column 1$/);
    expect(() => loadYamlFile(file(text))).not.toThrow(/s3cr3t-xyz-7/);
  });

  it('names the type, not the value, of a secret written as a number or a boolean', () => {
    const r = new ConfigReader();
    r.string({ client_secret: 31415926535897, signingKey: true, target: 5 }, 'client_secret', 'oauth');
    r.string({ signingKey: true }, 'signingKey', '');
    r.string({ target: 5 }, 'target', '');
    expect(r.problems.map((p) => `${p.path}: ${p.message}`)).toEqual([
      'oauth.client_secret: must be a string, got a number',
      'signingKey: must be a string, got a boolean',
      'target: must be a string, got number 5',
    ]);
  });
});
