import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { parseDuration } from './duration.ts';
import type { ProblemCode } from './error-codes.ts';
import { ConfigError, SvcError, errorText, problem, type Problem } from './errors.ts';

type Obj = Record<string, unknown>;

/**
 * Reads an untyped document field by field, recording every problem with its field path instead of
 * stopping at the first one, so a user fixes a config file in one pass (oauth2-proxy's validation
 * style). Readers return undefined for a bad field; `finish` throws one ConfigError with them all.
 */
export class ConfigReader {
  readonly problems: Problem[] = [];

  problem(path: string, message: string, code: ProblemCode = 'invalid'): void {
    this.problems.push(problem(path, message, code));
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
    const value = obj[key];
    const at = join(path, key);
    if (value === undefined || value === null || value === '') {
      if (options.required !== false) this.problem(at, 'required', 'required');
      return undefined;
    }
    if (typeof value !== 'string') {
      this.problem(at, `must be a string, got ${describe(value)}`);
      return undefined;
    }
    if (options.minLength !== undefined && value.length < options.minLength) {
      this.problem(at, `must be at least ${options.minLength} characters, got ${value.length}`);
      return undefined;
    }
    return value;
  }

  boolean(obj: Obj, key: string, path: string, options: { required?: boolean } = {}): boolean | undefined {
    const value = obj[key];
    const at = join(path, key);
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
    const value = obj[key];
    const at = join(path, key);
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

  /** `ip:port` or `host:port`, as a listener address. */
  bindAddress(obj: Obj, key: string, path: string): { host: string; port: number } | undefined {
    const text = this.string(obj, key, path);
    if (text === undefined) return undefined;
    const parsed = parseBindAddress(text);
    if (!parsed)
      this.problem(join(path, key), `must be ip:port (for example 0.0.0.0:8080), got ${JSON.stringify(text)}`);
    return parsed;
  }

  finish(source: string): void {
    if (this.problems.length > 0) throw new ConfigError(source, this.problems);
  }
}

export function parseBindAddress(text: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/** Loads a YAML file into an untyped document; a missing file or a syntax error is a ConfigError. */
export function loadYamlFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SvcError('config_unreadable', `cannot read configuration file ${path}: ${errorText(err)}`, {
      status: 400,
    });
  }
  try {
    return parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new ConfigError(path, [problem('', `YAML syntax: ${errorText(err)}`)]);
  }
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'a mapping' : `${typeof value} ${JSON.stringify(value)}`;
}
