import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { parseDuration } from './duration.ts';
import type { ProblemCode } from './error-codes.ts';
import { ConfigError, SvcError, errorText, problem, type Problem } from './errors.ts';
import { isSecretName } from './secret-names.ts';
import { listenAddressProblem, parseListenAddress, type ListenAddress } from './listen.ts';

type Obj = Record<string, unknown>;

/**
 * Reads an untyped document field by field, recording every problem with its field path instead of
 * stopping at the first one, so a user fixes a config file in one pass (oauth2-proxy's validation
 * style). Readers return undefined for a bad field; `finish` throws one ConfigError with them all.
 */
export class ConfigReader {
  readonly problems: Problem[] = [];
  /** Field paths whose value came from a command-line flag, and that flag (see {@link withFlags}). */
  private readonly flagOf: ReadonlyMap<string, string>;

  constructor(flagOf: ReadonlyMap<string, string> = new Map()) {
    this.flagOf = flagOf;
  }

  /** Records a problem under its field path, or under the flag that set the field. */
  problem(path: string, message: string, code: ProblemCode = 'invalid'): void {
    this.problems.push(problem(this.flagOf.get(path) ?? path, message, code));
  }

  object(value: unknown, path: string, options: { required?: boolean } = {}): Obj | undefined {
    if (value === undefined || value === null) {
      if (options.required !== false) this.problem(path, 'required', 'required');
      return undefined;
    }
    if (typeof value !== 'object' || Array.isArray(value)) {
      this.problem(path, `must be a mapping, got ${describe(value)}`);
      return undefined;
    }
    return value as Obj;
  }

  /** Reports keys the reader does not know, so a typo never silently falls back to a default. */
  unknownKeys(obj: Obj, path: string, known: readonly string[]): void {
    for (const key of Object.keys(obj)) {
      if (!known.includes(key))
        this.problem(join(path, key), `unknown field (known: ${known.join(', ')})`, 'unknown_field');
    }
  }

  string(
    obj: Obj,
    key: string,
    path: string,
    options: { required?: boolean; minLength?: number } = {},
  ): string | undefined {
    return this.stringAt(obj[key], join(path, key), options, key);
  }

  /**
   * A string given as a value at the field path `at` (the other readers take a mapping and a key);
   * `name` says whether it is a secret's, whose value a problem never quotes (default: `at`).
   */
  stringAt(
    value: unknown,
    at: string,
    options: { required?: boolean; minLength?: number } = {},
    name = at,
  ): string | undefined {
    if (value === undefined || value === null || value === '') {
      if (options.required !== false) this.problem(at, 'required', 'required');
      return undefined;
    }
    if (typeof value !== 'string') {
      // A secret written unquoted (digits, `yes`) is still a secret: name its type, never its value.
      this.problem(at, `must be a string, got ${isSecretName(name) ? describeType(value) : describe(value)}`);
      return undefined;
    }
    if (options.minLength !== undefined && value.length < options.minLength) {
      this.problem(at, `must be at least ${options.minLength} characters, got ${value.length}`);
      return undefined;
    }
    return value;
  }

  boolean(obj: Obj, key: string, path: string, options: { required?: boolean } = {}): boolean | undefined {
    return this.booleanAt(obj[key], join(path, key), options);
  }

  /** A boolean given as a value at the field path `at`. */
  booleanAt(value: unknown, at: string, options: { required?: boolean } = {}): boolean | undefined {
    if (value === undefined || value === null) {
      if (options.required !== false) this.problem(at, 'required', 'required');
      return undefined;
    }
    if (typeof value !== 'boolean') {
      this.problem(at, `must be true or false, got ${describe(value)}`);
      return undefined;
    }
    return value;
  }

  stringArray(
    obj: Obj,
    key: string,
    path: string,
    options: { required?: boolean; nonEmpty?: boolean } = {},
  ): string[] | undefined {
    return this.stringArrayAt(obj[key], join(path, key), options);
  }

  /** A list of non-empty strings given as a value at the field path `at`. */
  stringArrayAt(
    value: unknown,
    at: string,
    options: { required?: boolean; nonEmpty?: boolean } = {},
  ): string[] | undefined {
    if (value === undefined || value === null) {
      if (options.required !== false) this.problem(at, 'required', 'required');
      return undefined;
    }
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
      this.problem(at, 'must be a list of non-empty strings');
      return undefined;
    }
    if (options.nonEmpty && value.length === 0) {
      this.problem(at, 'must not be empty');
      return undefined;
    }
    return value as string[];
  }

  duration(obj: Obj, key: string, path: string, options: { required?: boolean } = {}): number | undefined {
    const text = this.string(obj, key, path, options);
    if (text === undefined) return undefined;
    const ms = parseDuration(text);
    if (ms === undefined)
      this.problem(join(path, key), `must be a duration such as 5m, 6h or 24h, got ${JSON.stringify(text)}`);
    return ms;
  }

  url(obj: Obj, key: string, path: string, options: { required?: boolean } = {}): URL | undefined {
    const text = this.string(obj, key, path, options);
    if (text === undefined) return undefined;
    return this.parseUrl(text, join(path, key));
  }

  /** An http(s) URL given as a value at the field path `at`. */
  urlAt(value: unknown, at: string, options: { required?: boolean } = {}): URL | undefined {
    const text = this.stringAt(value, at, options);
    if (text === undefined) return undefined;
    return this.parseUrl(text, at);
  }

  parseUrl(text: string, at: string): URL | undefined {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      this.problem(at, `must be an absolute URL, got ${JSON.stringify(text)}`);
      return undefined;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      this.problem(at, `must be an http or https URL, got ${JSON.stringify(text)}`);
      return undefined;
    }
    return url;
  }

  /** `ip:port`, as a listener address (lib/listen.ts). */
  bindAddress(obj: Obj, key: string, path: string): ListenAddress | undefined {
    const text = this.string(obj, key, path);
    if (text === undefined) return undefined;
    return this.listenAddress(text, join(path, key));
  }

  listenAddress(text: string, at: string): ListenAddress | undefined {
    const parsed = parseListenAddress(text);
    if (!parsed) this.problem(at, listenAddressProblem(text));
    return parsed;
  }

  finish(source: string): void {
    if (this.problems.length > 0) throw new ConfigError(source, this.problems);
  }
}

/** A command-line flag that sets one field of a config document (`--listen` sets `frontend.listen`). */
export interface FlagField {
  readonly flag: string;
  /** Dotted field path in the document. */
  readonly path: string;
  /** The flag's text; undefined when the flag was not given (the file's value stays). */
  readonly value: string | undefined;
}

/**
 * Merges the given flags into a config document (a flag wins over the file) and returns the merged
 * copy with a reader that names the flag, not the field, when that value is wrong. One validation
 * pass over the result then reports file and flag problems together.
 */
export function withFlags(doc: unknown, flags: readonly FlagField[]): { doc: unknown; reader: ConfigReader } {
  const flagOf = new Map<string, string>();
  let merged: unknown = doc ?? {};
  for (const { flag, path, value } of flags) {
    if (value === undefined) continue;
    merged = setField(merged, path.split('.'), value);
    flagOf.set(path, flag);
  }
  return { doc: merged, reader: new ConfigReader(flagOf) };
}

/** A copy of `doc` with `value` at `keys`; a document that is not a mapping there is left to validation. */
function setField(doc: unknown, keys: readonly string[], value: unknown): unknown {
  const [key, ...rest] = keys;
  if (key === undefined) return value;
  if (doc !== undefined && doc !== null && (typeof doc !== 'object' || Array.isArray(doc))) return doc;
  const obj = (doc ?? {}) as Obj;
  return { ...obj, [key]: setField(obj[key], rest, value) };
}

/** Loads a YAML (or JSON) file into an untyped document; a missing file or a syntax error is a ConfigError. */
export function loadYamlFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SvcError('config_unreadable', `cannot read configuration file ${path}: ${errorText(err)}`, {
      status: 400,
    });
  }
  return parseYamlText(text, path);
}

/**
 * Parses YAML (or JSON) text read from `path`; a syntax error is a ConfigError naming `path` and
 * the line, never quoting the text around it.
 */
export function parseYamlText(text: string, path: string): unknown {
  const json = parseStrictJson(text);
  if (json.ok) return json.value;
  // Loaded only here: yaml is 72 modules and 4-12 MiB of a process's memory, and the operator
  // writes the share sidecars' config as JSON (which is YAML too) so that they never load it.
  const { parse } = createRequire(import.meta.url)('yaml') as typeof Yaml;
  try {
    return parse(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    // The first line only: the parser's next lines quote the file around the error, secrets included.
    const where = (errorText(err).split('\n')[0] ?? '').replace(/:$/, '');
    throw new ConfigError(path, [problem('', `YAML syntax: ${where}`)]);
  }
}

/**
 * A JSON object or list document, read as YAML would read it. Anything else (YAML, malformed JSON, or a
 * repeated key, which JSON.parse would silently resolve to the last value) is left to the YAML
 * parser, whose errors name the line.
 */
function parseStrictJson(text: string): { ok: true; value: unknown } | { ok: false } {
  if (!/^\s*[{[]/.test(text)) return { ok: false };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false };
  }
  return hasRepeatedKey(text) ? { ok: false } : { ok: true, value };
}

/** Whether an object in this (valid) JSON text names a key twice. */
function hasRepeatedKey(text: string): boolean {
  const open: (Set<string> | undefined)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{') open.push(new Set());
    else if (c === '[') open.push(undefined);
    else if (c === '}' || c === ']') open.pop();
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      let next = end + 1;
      while (next < text.length && /\s/.test(text[next] ?? '')) next++;
      const keys = open.at(-1);
      if (keys && text[next] === ':') {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return true;
        keys.add(key);
      }
      i = end;
    }
  }
  return false;
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

/** What a value is, without the value: `a number`, `a list`. */
function describeType(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'a mapping' : `a ${typeof value}`;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a mapping' : `${typeof value} ${JSON.stringify(value)}`;
}
