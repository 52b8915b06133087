import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let environment: Readonly<Record<string, string>> | undefined;

/**
 * The environment the image gives every svc process (the Dockerfile's `ENV NAME=value` lines, e.g.
 * MALLOC_ARENA_MAX and NODE_OPTIONS), so a benchmark runs svc as the image does. Read once.
 */
export function imageEnvironment(): Readonly<Record<string, string>> {
  if (environment) return environment;
  const dockerfile = readFileSync(fileURLToPath(new URL('../../Dockerfile', import.meta.url)), 'utf8');
  const env: Record<string, string> = {};
  for (const match of dockerfile.matchAll(/^ENV ([A-Z_][A-Z0-9_]*)=(\S+)$/gm)) env[match[1] ?? ''] = match[2] ?? '';
  environment = env;
  return env;
}
