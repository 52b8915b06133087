import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadYamlFile } from './config-reader.ts';
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
