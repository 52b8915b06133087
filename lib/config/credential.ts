import { readFileSync } from 'node:fs';
import { isAbsolute, dirname, resolve } from 'node:path';
import { join, type ConfigReader } from '../config-reader.ts';
import { MIN_FRONTEND_CREDENTIAL_LENGTH } from '../tunnel/frontend-api.ts';

/**
 * The frontend credential at `<path>.<key>` (`credential_file`): the file's content, trimmed, at least
 * {@link MIN_FRONTEND_CREDENTIAL_LENGTH} characters. Read by the controller's `public_frontend` section and
 * the public frontend's `controller` section; a problem names the field and the file, never its content.
 * A relative path is relative to the config file.
 */
export function readCredentialFile(
  r: ConfigReader,
  obj: Record<string, unknown>,
  key: string,
  path: string,
  configPath?: string,
): { credential: string; credentialFile: string } | undefined {
  const given = r.string(obj, key, path);
  if (given === undefined) return undefined;
  const file = isAbsolute(given) || !configPath ? resolve(given) : resolve(dirname(configPath), given);
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    r.problem(join(path, key), `cannot read ${file} (${code})`);
    return undefined;
  }
  if (text.length < MIN_FRONTEND_CREDENTIAL_LENGTH) {
    r.problem(
      join(path, key),
      `${file} must hold at least ${MIN_FRONTEND_CREDENTIAL_LENGTH} characters (it holds ${text.length})`,
    );
    return undefined;
  }
  return { credential: text, credentialFile: file };
}
